package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// The engines --engine names.
const (
	enginePodman     = "podman"
	engineKubernetes = "kubernetes"
)

// defaultNamespace is --namespace's default.
const defaultNamespace = "default"

// The values of --kubernetes-workspace-volume. An emptyDir is the default:
// it needs nothing of the cluster, costs no provisioning on a session's
// first call, and goes with its Pod, as a session's files do on Podman; a
// claim is for a cluster whose sessions' files must outlive their Pod.
const (
	volumeEmptyDir = "emptydir"
	volumeClaim    = "claim"
)

// checkpointDirUsage is --checkpoint-dir's help, for the server and for
// `wink-mcp workspaces`.
const checkpointDirUsage = "directory holding the checkpoints of the kept workspaces of --engine kubernetes, one store each, " +
	"which every replica must share (a volume mounted into every replica and into no workspace Pod; default: <cache-dir>/checkpoints); " +
	"when set, a roaming workspace's (a 2026-07-28 handle's, opened without a name) are kept there too and follow it between replicas"

// kubernetesStartTimeout bounds a workspace Pod's way to Running, image
// pull included (the kubelet pulls; --pull-timeout is Podman's).
const kubernetesStartTimeout = 5 * time.Minute

// engineOptions are the flags that choose the engine, and the Kubernetes
// engine's own.
type engineOptions struct {
	name         string
	kubeconfig   string
	namespace    string
	agentImage   string
	runtimeClass string
	// workspaceVolume is what a session's /workspace is on: volumeEmptyDir
	// or volumeClaim.
	workspaceVolume string
	storageClass    string
	// profileRepository is the registry repository the profiles' images
	// were pushed to (`wink-mcp profiles build --push`).
	profileRepository string
	// allowUnenforcedNetworkPolicy is kubernetes.AllowFlag.
	allowUnenforcedNetworkPolicy bool
	// checkpointDir is workspace.Config.CheckpointDir.
	checkpointDir string
}

// bindEngineFlags declares the flags of engineOptions.
func bindEngineFlags(b *binder, o *engineOptions) {
	b.str(&o.name, "engine", "the container engine: podman, or kubernetes (each workspace a Pod; see docs/kubernetes.md)", "WINK_ENGINE")
	b.str(&o.kubeconfig, "kubeconfig", "kubeconfig of the cluster of --engine kubernetes (default: the in-cluster config, else $KUBECONFIG, else ~/.kube/config)", "WINK_KUBECONFIG")
	b.str(&o.namespace, "namespace", "namespace of the workspace Pods of --engine kubernetes", "WINK_NAMESPACE")
	b.str(&o.agentImage, "kubernetes-agent-image", "image holding only the static wink-mcp at /wink-mcp, which each workspace Pod's init container copies (--engine kubernetes; required)", "WINK_KUBERNETES_AGENT_IMAGE")
	b.str(&o.runtimeClass, "kubernetes-runtime-class", "runtimeClassName of the workspace Pods (gVisor, Kata; default: the cluster's)", "WINK_KUBERNETES_RUNTIME_CLASS")
	b.str(&o.workspaceVolume, "kubernetes-workspace-volume", "what each session's /workspace is on with --engine kubernetes: emptydir (gone with its Pod) or claim "+
		"(a PersistentVolumeClaim of --disk-limit, deleted at session end; the cluster needs a StorageClass)", "WINK_KUBERNETES_WORKSPACE_VOLUME")
	b.str(&o.storageClass, "kubernetes-storage-class", "StorageClass of the workspaces' PersistentVolumeClaims (--engine kubernetes; default: the cluster's default StorageClass)", "WINK_KUBERNETES_STORAGE_CLASS")
	b.str(&o.profileRepository, "kubernetes-profile-repository", "registry repository the images of the profiles with setup commands were pushed to by `wink-mcp profiles build --push REPOSITORY`; "+
		"their Pods run REPOSITORY:<the profile's content hash> (--engine kubernetes; required for such profiles)", "WINK_KUBERNETES_PROFILE_REPOSITORY")
	b.str(&o.checkpointDir, "checkpoint-dir", checkpointDirUsage, "WINK_CHECKPOINT_DIR")
	b.boolean(&o.allowUnenforcedNetworkPolicy, strings.TrimPrefix(kubernetes.AllowFlag, "--"), "make workspace Pods even where the cluster does not enforce their deny-all NetworkPolicy, so that they reach the cluster's network (--engine kubernetes); everything else stays enforced", "WINK_ALLOW_UNENFORCED_NETWORK_POLICY")
}

// resolveEngine checks the engine flags against the others. The Kubernetes
// engine keeps the files on the cluster (FilesOnEngineHost), and refuses
// here, at start-up, what it cannot do yet rather than failing mid-call.
func resolveEngine(w *workspace.Config, opts serveOptions) error {
	o := opts.engine
	switch o.name {
	case enginePodman:
		for flag, set := range map[string]bool{"--kubeconfig": o.kubeconfig != "", "--namespace": o.namespace != defaultNamespace,
			"--kubernetes-agent-image": o.agentImage != "", "--kubernetes-runtime-class": o.runtimeClass != "",
			"--kubernetes-workspace-volume": o.workspaceVolume != volumeEmptyDir, "--kubernetes-storage-class": o.storageClass != "",
			"--kubernetes-profile-repository": o.profileRepository != "", "--checkpoint-dir": o.checkpointDir != "",
			kubernetes.AllowFlag: o.allowUnenforcedNetworkPolicy} {
			if set {
				return fmt.Errorf("%s is a setting of --engine kubernetes, and the engine is podman; drop it or pass --engine kubernetes", flag)
			}
		}
		return nil
	case engineKubernetes:
	default:
		return fmt.Errorf("--engine %q: want podman or kubernetes", o.name)
	}
	var errs []error
	refuse := func(cond bool, what string) {
		if cond {
			errs = append(errs, fmt.Errorf("%s is not available with --engine kubernetes yet (see docs/kubernetes.md)", what))
		}
	}
	if o.agentImage == "" {
		errs = append(errs, errors.New("--kubernetes-agent-image is required with --engine kubernetes: the image each workspace Pod copies the agent from"))
	}
	if msgs := validation.IsDNS1123Label(o.namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--namespace %q: %s", o.namespace, msgs[0]))
	}
	if msgs := validation.IsDNS1123Subdomain(o.runtimeClass); o.runtimeClass != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--kubernetes-runtime-class %q: %s", o.runtimeClass, msgs[0]))
	}
	if o.workspaceVolume != volumeEmptyDir && o.workspaceVolume != volumeClaim {
		errs = append(errs, fmt.Errorf("--kubernetes-workspace-volume %q: want %s or %s", o.workspaceVolume, volumeEmptyDir, volumeClaim))
	}
	if o.workspaceVolume == volumeClaim && w.DiskBytes == 0 {
		errs = append(errs, errors.New("--kubernetes-workspace-volume claim needs --disk-limit above 0: it is the size each claim asks for"))
	}
	if msgs := validation.IsDNS1123Subdomain(o.storageClass); o.storageClass != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--kubernetes-storage-class %q: %s", o.storageClass, msgs[0]))
	}
	refuse(len(opts.mounts) > 0, "--mount")
	refuse(w.MountRoots, "--mount-roots")
	refuse(w.KeepSessionDirs, "--keep-session-dirs")
	refuse(len(opts.cdiDevices) > 0, "--cdi-device (a Pod asks for a device through its node's device plugin: a resource limit such as nvidia.com/gpu)")
	refuse(opts.filesOnHost != "auto", "--files-on-podman-host (a Pod's files are always on its node)")
	refuse(opts.service.urlFlag || opts.service.connectionFlag, "--podman-url or --podman-connection")
	if o.profileRepository != "" {
		if err := checkRepository("--kubernetes-profile-repository", o.profileRepository); err != nil {
			errs = append(errs, err)
		}
		w.PushedProfileRepository = o.profileRepository
	}
	for _, p := range w.Profiles.All() {
		if len(p.CDIDevices) > 0 {
			errs = append(errs, fmt.Errorf("profile %q has cdi_devices, which --engine kubernetes does not give (a Pod asks its node's device plugin, as a resource limit)", p.Name))
		}
		if len(p.Setup) > 0 && o.profileRepository == "" {
			// A setup container never runs on the cluster: Podman builds the image.
			errs = append(errs, fmt.Errorf("profile %q has setup commands, which --engine kubernetes does not run: "+
				"build and push its image with `wink-mcp profiles build --push REPOSITORY --profiles FILE` on a machine with Podman, "+
				"then pass --kubernetes-profile-repository REPOSITORY", p.Name))
		}
	}
	w.CheckpointDir = o.checkpointDir // Config.Validate wants it absolute
	w.FilesOnEngineHost = true
	return errors.Join(errs...)
}

// newEngine builds the container engine the flags name. This is the one
// place an engine is chosen: every package the engine is handed to stays
// engine-neutral (see package engine), and learns of its service through
// engine.Engine.
func newEngine(w workspace.Config, opts serveOptions, log *slog.Logger) (engine.Engine, error) {
	if o := opts.engine; o.name == engineKubernetes {
		return kubernetes.New(kubernetes.Options{Kubeconfig: o.kubeconfig, Namespace: o.namespace, AgentImage: o.agentImage,
			RuntimeClass: o.runtimeClass, Claims: o.workspaceVolume == volumeClaim, StorageClass: o.storageClass,
			ManagedLabel: workspace.LabelManaged, InstanceLabel: workspace.LabelInstance, AllowUnenforcedNetworkPolicy: o.allowUnenforcedNetworkPolicy,
			APITimeout: w.APITimeout, StartTimeout: kubernetesStartTimeout}, log), nil
	}
	return newPodmanEngine(w, opts.service, log)
}

package kubernetes

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// Names of the Pod's parts.
const (
	workspaceContainer = "workspace"
	agentContainer     = "agent"
	cutOffContainer    = "cut-off"
	tmpVolume          = "tmp"
	workspaceVolume    = "workspace"
	agentVolume        = "agent"
	// agentImagePath is where the agent image holds the static wink-mcp.
	agentImagePath = "/wink-mcp"
	// agentCopyDir is where the init container sees the agent's volume.
	agentCopyDir = "/.wink-agent"
	// labelsAnnotation holds every label of the Spec as JSON: a label whose
	// value Kubernetes refuses (a lock file's path) is only there.
	labelsAnnotation = "io.wink-mcp/labels"
)

// Requests are what the scheduler reserves for a workspace: little, as the
// Podman engine reserves nothing, so that a node holds as many idle
// workspaces as its memory allows; the limits bound what each may use.
var (
	cpuRequest    = resource.MustParse("10m")
	memoryRequest = resource.MustParse("32Mi")
)

// podFor turns a Spec into the Pod of a workspace. Every hardening setting
// is explicit, so nothing depends on the namespace's defaults:
//   - the Podman engine's container in Kubernetes terms: Spec.User,
//     never root, no privilege escalation, every capability dropped (Spec.Caps
//     is a setup container's, refused), the runtime's seccomp profile, CPU and memory limits, /tmp
//     a memory emptyDir of Spec.TmpBytes;
//   - what a Pod has and a Podman container has not: no service-account
//     token, no service links, no host namespace;
//   - /workspace an emptyDir bounded by Spec.DiskBytes (ephemeral storage),
//     or with Options.Claims the claim Spec.WorkspaceVolume (claim.go),
//     owned by the Pod's group (fsGroup, the same as its runAsGroup);
//   - where the deny-all policy is enforced, a cut-off init container that
//     waits until a connect to cutOff (the network probe's target) fails:
//     an enforcer may write a new Pod's rules a moment after it starts,
//     and the workspace container must not start before.
//
// The root filesystem stays writable, as Podman's is. The pids limit,
// RLIMIT_NOFILE and RLIMIT_NPROC are not Pod settings (a node's kubelet
// has one podPidsLimit for every Pod; rlimits are the runtime's).
func podFor(spec engine.Spec, opts Options, cutOff string) *corev1.Pod {
	uid, gid := parseUser(spec.User)
	sec := &corev1.SecurityContext{
		RunAsUser:                ptr.To(uid),
		RunAsGroup:               ptr.To(gid),
		RunAsNonRoot:             ptr.To(true),
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	// The container user (nobody) has no writable home directory.
	vars := map[string]string{"HOME": "/tmp"}
	maps.Copy(vars, spec.Env)
	var env []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, corev1.EnvVar{Name: k, Value: vars[k]})
	}
	limits := corev1.ResourceList{}
	if spec.Limited("memory") {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(spec.MemoryBytes, resource.BinarySI)
	}
	if spec.Limited("cpu") {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(spec.CPUs*1000), resource.DecimalSI)
	}
	workspaceDir := corev1.EmptyDirVolumeSource{}
	if spec.DiskBytes > 0 {
		disk := resource.NewQuantity(spec.DiskBytes, resource.BinarySI)
		limits[corev1.ResourceEphemeralStorage] = *disk
		workspaceDir.SizeLimit = disk
	}
	requests := corev1.ResourceList{}
	if _, ok := limits[corev1.ResourceCPU]; ok {
		requests[corev1.ResourceCPU] = cpuRequest
	}
	if m, ok := limits[corev1.ResourceMemory]; ok {
		requests[corev1.ResourceMemory] = minQuantity(memoryRequest, m)
	}
	workspace := corev1.VolumeSource{EmptyDir: &workspaceDir}
	podSecurity := &corev1.PodSecurityContext{
		RunAsUser: ptr.To(uid), RunAsGroup: ptr.To(gid), RunAsNonRoot: ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if usesClaim(spec, opts) {
		// The claim's folder is its provisioner's; the kubelet gives it
		// to the workspace's own group, once, as it mounts it.
		workspace = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: spec.WorkspaceVolume}}
		podSecurity.FSGroup = ptr.To(gid)
		podSecurity.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	}
	labels, annotation := podLabels(spec.Labels)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: opts.Namespace, Labels: labels,
			Annotations: map[string]string{labelsAnnotation: annotation}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Hostname:                      "workspace",
			SecurityContext:               podSecurity,
			InitContainers: []corev1.Container{{
				Name:            agentContainer,
				Image:           opts.AgentImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{agentImagePath, "install-agent", agentCopyDir + "/" + agentName()},
				SecurityContext: sec,
				Resources:       corev1.ResourceRequirements{Limits: limits, Requests: requests},
				VolumeMounts:    []corev1.VolumeMount{{Name: agentVolume, MountPath: agentCopyDir}},
			}},
			Containers: []corev1.Container{{
				Name:            workspaceContainer,
				Image:           spec.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{engine.AgentPath},
				Args:            []string{"agent", "--workspace", spec.Root},
				WorkingDir:      spec.Root,
				Env:             env,
				SecurityContext: sec,
				Resources:       corev1.ResourceRequirements{Limits: limits, Requests: requests},
				VolumeMounts: []corev1.VolumeMount{
					{Name: agentVolume, MountPath: agentDir(), ReadOnly: true},
					{Name: tmpVolume, MountPath: "/tmp"},
					{Name: workspaceVolume, MountPath: spec.Root},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: agentVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(spec.TmpBytes, resource.BinarySI)}}},
				{Name: workspaceVolume, VolumeSource: workspace},
			},
		},
	}
	if cutOff != "" {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name:                     cutOffContainer,
			Image:                    opts.AgentImage,
			ImagePullPolicy:          corev1.PullIfNotPresent,
			Command:                  []string{agentImagePath, AwaitCutOffCommand, cutOff, ProbeSettle.String()},
			SecurityContext:          sec,
			Resources:                corev1.ResourceRequirements{Limits: limits, Requests: requests},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		})
	}
	pod.Spec.RuntimeClassName = runtimeClass(opts)
	return pod
}

// agentDir and agentName split engine.AgentPath: the agent's volume is
// mounted at its directory.
func agentDir() string  { d, _ := splitAgentPath(); return d }
func agentName() string { _, n := splitAgentPath(); return n }

func splitAgentPath() (dir, name string) {
	i := strings.LastIndex(engine.AgentPath, "/")
	return engine.AgentPath[:i], engine.AgentPath[i+1:]
}

// podLabels returns the labels Kubernetes accepts as Pod labels, and every
// label as the JSON of labelsAnnotation.
func podLabels(all map[string]string) (map[string]string, string) {
	labels := map[string]string{}
	for k, v := range all {
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
		}
	}
	data, _ := json.Marshal(all) // a map of strings always marshals
	return labels, string(data)
}

// objectLabels returns the labels a Pod or claim was made with (see
// podLabels).
func objectLabels(m metav1.ObjectMeta) map[string]string {
	var all map[string]string
	if err := json.Unmarshal([]byte(m.Annotations[labelsAnnotation]), &all); err != nil || all == nil {
		return maps.Clone(m.Labels)
	}
	return all
}

func minQuantity(a, b resource.Quantity) resource.Quantity {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// parseUser splits a numeric "uid:gid"; the workspace manager checked it.
func parseUser(user string) (uid, gid int64) {
	u, g, _ := strings.Cut(user, ":")
	uid, _ = strconv.ParseInt(u, 10, 64)
	gid, _ = strconv.ParseInt(g, 10, 64)
	return uid, gid
}

// refused says why spec asks for what a Pod of this engine cannot be yet.
func refused(spec engine.Spec) error {
	feature := ""
	switch {
	case spec.WorkspaceInContainer || spec.TmpOnDisk || len(spec.Caps) > 0:
		feature = "a profile's setup commands (an image made from a setup container)"
	case len(spec.Mounts) > 0:
		feature = "host folders mounted into the workspace (--mount, --mount-roots)"
	case spec.WorkspaceDir != "":
		feature = "a /workspace on this machine's disk (the files of a Pod are on its node)"
	}
	if uid, _ := parseUser(spec.User); feature == "" && uid == 0 {
		feature = "a workspace running as root (--user 0:...)"
	}
	if feature == "" {
		return nil
	}
	return fmt.Errorf("%s: %w", feature, ErrNotAvailable)
}

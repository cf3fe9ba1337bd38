package kubernetes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// newWithClient returns an Engine that uses client, which cannot exec, on
// a cluster already probed to enforce the deny-all NetworkPolicy, which is
// in the client's store (recorded as no action).
func newWithClient(opts Options, client *fake.Clientset, log *slog.Logger) *Engine {
	e := newUnprobed(opts, client, log)
	e.network = &engine.NetworkPolicy{Enforced: true, Target: "10.0.0.1:6443"}
	if err := client.Tracker().Add(denyAllPolicy(opts.Namespace, opts.ManagedLabel)); err != nil {
		panic(err)
	}
	return e
}

// newUnprobed returns an Engine that uses client and has not probed the
// cluster's network yet.
// twoReplicas returns two engines on one fake API server, as two
// replicas see it: a, probed, and b, not.
func twoReplicas(client *fake.Clientset) (a, b *Engine) {
	log := slog.New(slog.DiscardHandler)
	return newWithClient(testOptions, client, log), newUnprobed(testOptions, client, log)
}

func newUnprobed(opts Options, client k8s.Interface, log *slog.Logger) *Engine {
	e := New(opts, log)
	e.client = client
	return e
}

// testSpec is a session's Spec as the workspace manager makes it with the
// files on the engine's host.
func testSpec() engine.Spec {
	return engine.Spec{
		Name: "wink-0123456789abcdef", Image: "localhost/wink-workspace:bookworm", User: "65534:65534", Root: "/workspace",
		Labels:          map[string]string{"io.wink-mcp.managed": "true", "io.wink-mcp.lock": "/var/cache/wink-mcp/instances/x.lock"},
		WorkspaceVolume: "wink-0123456789abcdef", CopyAgent: true,
		Limits: engine.Limits{MemoryBytes: 1 << 30, CPUs: 1, PidsLimit: 256, TmpBytes: 256 << 20, DiskBytes: 2 << 30},
	}
}

var testOptions = Options{Namespace: "wink", AgentImage: "localhost/wink-agent:test", RuntimeClass: "gvisor", ManagedLabel: "io.wink-mcp.managed",
	APITimeout: 10e9, StartTimeout: 10e9}

// TestCreateRefusesWeakenedPods makes a Pod through a fake API server whose
// admission weakens one setting at a time: Create must fail with
// ErrSettingsDrift naming the setting, and delete the Pod.
func TestCreateRefusesWeakenedPods(t *testing.T) {
	t.Parallel()
	workspace := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
	cases := []struct {
		name   string
		field  string
		weaken func(*corev1.Pod)
	}{
		{"service-account token", "spec.automountServiceAccountToken", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(true) }},
		{"service links", "spec.enableServiceLinks", func(p *corev1.Pod) { p.Spec.EnableServiceLinks = nil }},
		{"host network", "spec.hostNetwork", func(p *corev1.Pod) { p.Spec.HostNetwork = true }},
		{"host pid", "spec.hostPID", func(p *corev1.Pod) { p.Spec.HostPID = true }},
		{"host ipc", "spec.hostIPC", func(p *corev1.Pod) { p.Spec.HostIPC = true }},
		{"shared process namespace", "spec.shareProcessNamespace", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) }},
		{"runtime class", "spec.runtimeClassName", func(p *corev1.Pod) { p.Spec.RuntimeClassName = nil }},
		{"pod user", "spec.securityContext", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0) }},
		{"pod non-root", "spec.securityContext", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = nil }},
		{"pod seccomp", "spec.securityContext", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
		{"tmp size", "spec.volumes", func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.SizeLimit = nil }},
		{"tmp on disk", "spec.volumes", func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.Medium = "" }},
		{"workspace size", "spec.volumes", func(p *corev1.Pod) { p.Spec.Volumes[2].EmptyDir.SizeLimit = nil }},
		{"host path", "spec.volumes", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}},
		{"sidecar", "spec.containers", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar"}) }},
		{"ephemeral container", "spec.ephemeralContainers", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
		}},
		{"image", "spec.containers[0].image", func(p *corev1.Pod) { workspace(p).Image = "other" }},
		{"command", "spec.containers[0].command", func(p *corev1.Pod) { workspace(p).Command = []string{"/bin/sh"} }},
		{"privileged", "spec.containers[0].securityContext", func(p *corev1.Pod) { workspace(p).SecurityContext.Privileged = ptr.To(true) }},
		{"privilege escalation", "spec.containers[0].securityContext", func(p *corev1.Pod) {
			workspace(p).SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}},
		{"capability added", "spec.containers[0].securityContext", func(p *corev1.Pod) {
			workspace(p).SecurityContext.Capabilities.Add = []corev1.Capability{"NET_RAW"}
		}},
		{"capabilities kept", "spec.containers[0].securityContext", func(p *corev1.Pod) { workspace(p).SecurityContext.Capabilities.Drop = nil }},
		{"container seccomp", "spec.containers[0].securityContext", func(p *corev1.Pod) { workspace(p).SecurityContext.SeccompProfile = nil }},
		{"container user", "spec.containers[0].securityContext", func(p *corev1.Pod) { workspace(p).SecurityContext.RunAsUser = ptr.To[int64](0) }},
		{"unmasked proc", "spec.containers[0].securityContext", func(p *corev1.Pod) {
			workspace(p).SecurityContext.ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}},
		{"memory limit", "spec.containers[0].resources.limits", func(p *corev1.Pod) { delete(workspace(p).Resources.Limits, corev1.ResourceMemory) }},
		{"cpu limit", "spec.containers[0].resources.limits", func(p *corev1.Pod) { workspace(p).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2") }},
		{"disk limit", "spec.containers[0].resources.limits", func(p *corev1.Pod) {
			delete(workspace(p).Resources.Limits, corev1.ResourceEphemeralStorage)
		}},
		{"extra mount", "spec.containers[0].volumeMounts", func(p *corev1.Pod) {
			workspace(p).VolumeMounts = append(workspace(p).VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/etc"})
		}},
		{"agent writable", "spec.containers[0].volumeMounts", func(p *corev1.Pod) { workspace(p).VolumeMounts[0].ReadOnly = false }},
		{"init container privileged", "spec.initContainers[0].securityContext", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].SecurityContext.Privileged = ptr.To(true)
		}},
		{"init container image", "spec.initContainers[0].image", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "other" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
				// Changed in place, the Pod goes on to the fake's store as admitted.
				tc.weaken(action.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
				return false, nil, nil
			})
			e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
			err := e.Create(context.Background(), testSpec())
			if !errors.Is(err, engine.ErrSettingsDrift) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Create = %v; want ErrSettingsDrift naming %s", err, tc.field)
			}
			if _, err := client.CoreV1().Pods("wink").Get(context.Background(), testSpec().Name, metav1.GetOptions{}); err == nil {
				t.Error("the weakened Pod was left behind")
			}
		})
	}
}

// TestCreateKeepsAnUnchangedPod checks the Pod podFor asks for passes its
// own check and stays, and that List finds it with every label, also those
// Kubernetes refuses as label values.
func TestCreateKeepsAnUnchangedPod(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	if err := e.Create(ctx, testSpec()); err != nil {
		t.Fatal(err)
	}
	if err := e.Create(ctx, testSpec()); !errors.Is(err, engine.ErrNameInUse) {
		t.Errorf("second Create = %v; want ErrNameInUse", err)
	}
	listed, err := e.List(ctx, "io.wink-mcp.managed")
	if err != nil || len(listed) != 1 || listed[0].Labels["io.wink-mcp.lock"] != testSpec().Labels["io.wink-mcp.lock"] {
		t.Fatalf("List = %+v, %v; want the Pod with its labels", listed, err)
	}
	if err := e.Remove(ctx, testSpec().Name); err != nil {
		t.Fatal(err)
	}
	if exists, _, err := e.Running(ctx, testSpec().Name); exists || err != nil {
		t.Errorf("Running after Remove = %v, %v; want gone", exists, err)
	}
}

// TestCreateRefusesWhatPodsCannotBeYet checks the features this engine
// does not have fail by name, before any Pod is made.
func TestCreateRefusesWhatPodsCannotBeYet(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*engine.Spec){
		"setup": func(s *engine.Spec) { s.WorkspaceInContainer, s.Caps = true, engine.SetupCaps },
		"--mount": func(s *engine.Spec) {
			s.Mounts = []engine.Mount{{Source: "/src", Destination: "/workspace/src", ReadOnly: true}}
		},
		"root": func(s *engine.Spec) { s.User = "0:0" },
	}
	for name, change := range cases {
		spec := testSpec()
		change(&spec)
		client := fake.NewClientset()
		e := newWithClient(testOptions, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := e.Create(context.Background(), spec); !errors.Is(err, ErrNotAvailable) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Create = %v; want ErrNotAvailable naming %s", name, err, name)
		}
		if len(client.Actions()) > 0 {
			t.Errorf("%s: Create called the API server: %v", name, client.Actions())
		}
	}
}

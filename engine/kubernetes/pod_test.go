package kubernetes

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func TestPodFor(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	spec.Env = map[string]string{"HOME": "/workspace", "LANG": "C.UTF-8"}
	pod := podFor(spec, testOptions, "")
	c := pod.Spec.Containers[0]
	if got := c.Resources.Limits; got.Memory().Value() != 1<<30 || got.Cpu().MilliValue() != 1000 || got.StorageEphemeral().Value() != 2<<30 {
		t.Errorf("limits %v; want 1Gi of memory, 1 CPU, 2Gi of ephemeral storage", got)
	}
	if got := c.Resources.Requests; got.Cpu().MilliValue() != 10 || got.Memory().Value() != 32<<20 {
		t.Errorf("requests %v; want 10m and 32Mi", got)
	}
	if len(c.Env) != 2 || c.Env[0] != (corev1.EnvVar{Name: "HOME", Value: "/workspace"}) {
		t.Errorf("env %v; want the Spec's HOME over the default, once", c.Env)
	}
	if pod.Labels["io.wink-mcp.managed"] != "true" || pod.Labels["io.wink-mcp.lock"] != "" {
		t.Errorf("labels %v; want managed, and no lock path (no label value)", pod.Labels)
	}
	if *pod.Spec.RuntimeClassName != "gvisor" || pod.Spec.InitContainers[0].Image != testOptions.AgentImage {
		t.Errorf("runtime class %v, init image %s", pod.Spec.RuntimeClassName, pod.Spec.InitContainers[0].Image)
	}
	if got := c.Command[0] + " " + c.Args[0]; got != "/.wink/wink-mcp agent" || c.VolumeMounts[0].MountPath != "/.wink" {
		t.Errorf("the workspace container runs %q with the agent's volume at %s", got, c.VolumeMounts[0].MountPath)
	}

	// Without a disk limit, nor a CPU limit the host cannot enforce.
	spec.DiskBytes, spec.Unlimited = 0, "cpu"
	opts := testOptions
	opts.RuntimeClass = ""
	pod = podFor(spec, opts, "")
	c = pod.Spec.Containers[0]
	if _, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok || pod.Spec.Volumes[2].EmptyDir.SizeLimit != nil {
		t.Errorf("without a disk limit: limits %v, /workspace %+v", c.Resources.Limits, pod.Spec.Volumes[2].EmptyDir)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok || pod.Spec.RuntimeClassName != nil {
		t.Errorf("cpu unlimited: limits %v; runtime class %v", c.Resources.Limits, pod.Spec.RuntimeClassName)
	}
}

// TestPodForCutOff: where the policy is enforced, a second init
// container, hardened as the first, waits for the Pod's network to be cut
// off before the workspace container starts; where it is not, there is
// none (nothing would ever cut it off).
func TestPodForCutOff(t *testing.T) {
	t.Parallel()
	if n := len(podFor(testSpec(), testOptions, "").Spec.InitContainers); n != 1 {
		t.Errorf("%d init containers without a cut-off target; want the agent's alone", n)
	}
	pod := podFor(testSpec(), testOptions, "10.0.0.1:6443")
	if n := len(pod.Spec.InitContainers); n != 2 {
		t.Fatalf("%d init containers with a cut-off target; want 2", n)
	}
	agent, cut := pod.Spec.InitContainers[0], pod.Spec.InitContainers[1]
	if cut.Name != "cut-off" || cut.Image != testOptions.AgentImage ||
		!slices.Equal(cut.Command, []string{"/wink-mcp", AwaitCutOffCommand, "10.0.0.1:6443", ProbeSettle.String()}) {
		t.Errorf("the cut-off init container %s runs %v from %s", cut.Name, cut.Command, cut.Image)
	}
	if !equality.Semantic.DeepEqual(cut.SecurityContext, agent.SecurityContext) || !equality.Semantic.DeepEqual(cut.Resources, agent.Resources) {
		t.Errorf("the cut-off init container is not hardened and bounded as the agent's: %+v %+v", cut.SecurityContext, cut.Resources)
	}
}

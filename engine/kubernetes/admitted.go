package kubernetes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/wink-mcp/wink-mcp/engine"
)

// checkAdmitted compares the Pod the API server admitted with the one asked
// for: admission webhooks and a namespace's policies may change a Pod, and
// a workspace must not run with weaker settings than it asked for. It
// returns an error wrapping engine.ErrSettingsDrift that names every
// setting that differs.
func checkAdmitted(want, got *corev1.Pod) error {
	var drift []string
	differ := func(field string, same bool) {
		if !same {
			drift = append(drift, field)
		}
	}
	w, g := want.Spec, got.Spec
	differ("spec.automountServiceAccountToken", equality.Semantic.DeepEqual(w.AutomountServiceAccountToken, g.AutomountServiceAccountToken))
	differ("spec.enableServiceLinks", equality.Semantic.DeepEqual(w.EnableServiceLinks, g.EnableServiceLinks))
	differ("spec.hostNetwork", !g.HostNetwork)
	differ("spec.hostPID", !g.HostPID)
	differ("spec.hostIPC", !g.HostIPC)
	differ("spec.shareProcessNamespace", g.ShareProcessNamespace == nil || !*g.ShareProcessNamespace)
	differ("spec.runtimeClassName", equality.Semantic.DeepEqual(w.RuntimeClassName, g.RuntimeClassName))
	differ("spec.securityContext", equality.Semantic.DeepEqual(w.SecurityContext, podSecurity(w.SecurityContext, g.SecurityContext)))
	differ("spec.volumes", equality.Semantic.DeepEqual(w.Volumes, g.Volumes))
	differ("spec.initContainers", len(w.InitContainers) == len(g.InitContainers))
	differ("spec.containers", len(w.Containers) == len(g.Containers))
	differ("spec.ephemeralContainers", len(g.EphemeralContainers) == 0)
	for _, kind := range []struct {
		field     string
		want, got []corev1.Container
	}{{"spec.initContainers", w.InitContainers, g.InitContainers}, {"spec.containers", w.Containers, g.Containers}} {
		for i := range min(len(kind.want), len(kind.got)) {
			drift = append(drift, containerDrift(fmt.Sprintf("%s[%d]", kind.field, i), kind.want[i], kind.got[i])...)
		}
	}
	if len(drift) == 0 {
		return nil
	}
	return fmt.Errorf("%w: Pod %s/%s was admitted with %s changed (an admission webhook or policy of the cluster?)",
		engine.ErrSettingsDrift, got.Namespace, got.Name, strings.Join(drift, ", "))
}

// podSecurity is the part of a Pod's security context the engine sets: a
// policy's additions that weaken nothing (supplemental groups, sysctls
// left empty) count as differences only through the fields compared; the
// fsGroup of a workspace on a claim (pod.go) is compared, and one added
// to a Pod without a claim is ignored.
func podSecurity(want, s *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	if s == nil {
		return nil
	}
	got := &corev1.PodSecurityContext{RunAsUser: s.RunAsUser, RunAsGroup: s.RunAsGroup, RunAsNonRoot: s.RunAsNonRoot,
		SeccompProfile: s.SeccompProfile, SELinuxOptions: s.SELinuxOptions, WindowsOptions: s.WindowsOptions,
		AppArmorProfile: s.AppArmorProfile, Sysctls: s.Sysctls}
	if want != nil && want.FSGroup != nil {
		got.FSGroup, got.FSGroupChangePolicy = s.FSGroup, s.FSGroupChangePolicy
	}
	return got
}

// containerDrift names the settings of container got, at field, that
// differ from want's.
func containerDrift(field string, want, got corev1.Container) []string {
	var drift []string
	differ := func(name string, same bool) {
		if !same {
			drift = append(drift, field+"."+name)
		}
	}
	differ("image", want.Image == got.Image)
	differ("command", slices.Equal(want.Command, got.Command))
	differ("args", slices.Equal(want.Args, got.Args))
	differ("securityContext", equality.Semantic.DeepEqual(containerSecurity(want.SecurityContext), containerSecurity(got.SecurityContext)))
	differ("resources.limits", equality.Semantic.DeepEqual(want.Resources.Limits, got.Resources.Limits))
	differ("volumeMounts", equality.Semantic.DeepEqual(want.VolumeMounts, got.VolumeMounts))
	return drift
}

// containerSecurity is a container's security context with the API
// server's defaults taken out: procMount Default is the runtime's own.
func containerSecurity(s *corev1.SecurityContext) *corev1.SecurityContext {
	if s == nil {
		return nil
	}
	c := s.DeepCopy()
	if c.ProcMount != nil && *c.ProcMount == corev1.DefaultProcMount {
		c.ProcMount = nil
	}
	return c
}

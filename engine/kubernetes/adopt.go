package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wink-mcp/wink-mcp/engine"
)

// Any replica reaches any Pod of the namespace: a server that takes a
// kept workspace over (keptWorkspaces, which the Engine embeds) adopts the Pod its last holder left (relabels it as
// its own, then opens its own channel to it), rather than making one.

// Adopt finds the running Pod, not being deleted, whose labels (as it was
// made with them: objectLabels) have key=value, and sets its labels to
// labels, with the Pod's resourceVersion as a precondition so that two
// servers never both adopt it. It returns the Pod's name, "" when there is
// none.
func (k keptWorkspaces) Adopt(ctx context.Context, key, value string, labels map[string]string) (_ string, err error) {
	e := k.e
	client, c, end, err := e.call(ctx)
	if err != nil {
		return "", err
	}
	defer end(&err)
	pods := client.CoreV1().Pods(e.opts.Namespace)
	list, err := pods.List(c, metav1.ListOptions{LabelSelector: e.opts.ManagedLabel + "=true"})
	if err != nil {
		return "", fmt.Errorf("listing Pods to adopt: %w", err)
	}
	pod := adoptable(list.Items, key, value)
	if pod == nil {
		return "", nil
	}
	patch, err := relabelPatch(pod, labels)
	if err != nil {
		return "", err
	}
	_, err = pods.Patch(c, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsConflict(err):
		return "", fmt.Errorf("adopting Pod %s: another server changed it meanwhile (%w); try again", pod.Name, err)
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("adopting Pod %s (patching its labels): %w", pod.Name, err)
	}
	return pod.Name, nil
}

// adoptable returns the Pod of pods whose labels have key=value, running
// and not being deleted; nil when there is none.
func adoptable(pods []corev1.Pod, key, value string) *corev1.Pod {
	for i := range pods {
		p := &pods[i]
		if objectLabels(p.ObjectMeta)[key] == value && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p
		}
	}
	return nil
}

// relabelPatch is the merge patch that gives pod labels (and the
// annotation that keeps them all: podLabels), removing the labels it
// had that labels lacks, on the condition of its resourceVersion.
func relabelPatch(pod *corev1.Pod, labels map[string]string) ([]byte, error) {
	accepted, annotation := podLabels(labels)
	set := map[string]any{}
	for k := range pod.Labels {
		set[k] = nil
	}
	for k, v := range accepted {
		set[k] = v
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": pod.ResourceVersion,
		"labels":          set,
		"annotations":     map[string]string{labelsAnnotation: annotation},
	}})
}

// The Engine's Pods are adopted by the server that takes their kept
// workspace over.
var _ engine.ContainerAdopter = (*Engine)(nil)

// adoptWindow is how long after taking a kept workspace's Lease its new
// holder has to adopt the Pod a dead holder left.
const adoptWindow = 2 * time.Minute

// AwaitsAdoption reads the Lease of the kept workspace name (of the
// roaming workspace name: roaming.go); awaitsAdoption says what it
// decides. A missing Lease awaits nothing.
func (k keptWorkspaces) AwaitsAdoption(ctx context.Context, name string, roaming bool, idle time.Duration) (_ bool, err error) {
	e := k.e
	client, c, end, err := e.call(ctx)
	if err != nil {
		return false, err
	}
	defer end(&err)
	leaseName := keptObjectName(name)
	if roaming {
		leaseName = roamingObjectName(name)
	}
	lease, err := client.CoordinationV1().Leases(e.opts.Namespace).Get(c, leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the Lease %s of workspace %q: %w", leaseName, name, err)
	}
	return awaitsAdoption(lease, time.Now(), idle) || roaming && liveHandoff(lease, time.Now()), nil
}

// awaitsAdoption decides whether a dead server's Pod on the kept
// workspace of lease stays for adoption at now: while its holder has
// stopped renewing it (killed) for less than idle, the next call on the
// workspace adopts the Pod; while a live holder took it less than
// adoptWindow ago, that holder is adopting it. Otherwise (a live holder
// long settled, which has its own Pod, or a workspace idle past idle) it
// goes.
func awaitsAdoption(lease *coordinationv1.Lease, now time.Time, idle time.Duration) bool {
	s := lease.Spec
	if s.RenewTime == nil {
		return false
	}
	holder, _ := liveHolder(lease, now)
	renewing := holder != "" && now.Sub(s.RenewTime.Time) <= 2*keptRenewEvery
	if !renewing {
		return now.Sub(s.RenewTime.Time) < idle
	}
	return s.AcquireTime != nil && now.Sub(s.AcquireTime.Time) < adoptWindow
}

package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// pollInterval is how often a Pod's phase is read while waiting for it.
const pollInterval = 50 * time.Millisecond

// Create makes the workspace's Pod, reads it back as admitted and deletes
// it, with an error naming each weakened setting, when admission weakened
// any (checkAdmitted). It refuses to make it while the deny-all
// NetworkPolicy is missing or not deny-all, or the cluster does not
// enforce it and AllowUnenforcedNetworkPolicy is false (NetworkPolicy).
// With Options.Claims it first makes the claim of /workspace when missing
// (claim.go). The Pod starts at once: Start waits for it.
func (e *Engine) Create(ctx context.Context, spec engine.Spec) (err error) {
	if err := refused(spec); err != nil {
		return err
	}
	if msgs := validation.IsDNS1123Subdomain(spec.Name); len(msgs) > 0 {
		return fmt.Errorf("the workspace name %q is no Kubernetes Pod name (%s): choose a --name-prefix of lower-case letters, digits and '-'", spec.Name, msgs[0])
	}
	if e.opts.AgentImage == "" {
		return fmt.Errorf("--kubernetes-agent-image is not set: the Pods need the image the agent is copied from")
	}
	n, err := e.NetworkPolicy(ctx)
	if err != nil {
		return err
	}
	if err := verdict(n); err != nil {
		return err
	}
	client, c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	if err := e.requirePolicy(c, client); err != nil {
		return err
	}
	if usesClaim(spec, e.opts) {
		if err := e.ensureClaim(c, client, spec); err != nil {
			return err
		}
	}
	cutOff := ""
	if n.Enforced {
		cutOff = n.Target
	}
	want := podFor(spec, e.opts, cutOff)
	got, err := client.CoreV1().Pods(e.opts.Namespace).Create(c, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Pod %s: %w", spec.Name, engine.ErrNameInUse)
	}
	if err != nil {
		return fmt.Errorf("creating Pod %s: %w", spec.Name, err)
	}
	// The create's answer is the Pod as admitted, mutations included.
	if err := checkAdmitted(want, got); err != nil {
		if rmErr := e.remove(c, client, spec.Name); rmErr != nil {
			e.log.Warn("removing a Pod admitted with weakened settings", "pod", spec.Name, "err", rmErr)
		}
		return err
	}
	return nil
}

// Start waits for the Pod, which runs from its creation, to be Running:
// scheduled, its agent copied and its workspace container started.
func (e *Engine) Start(ctx context.Context, name string) error {
	client, err := e.connect()
	if err != nil {
		return err
	}
	c, cancel := context.WithTimeout(ctx, e.opts.StartTimeout)
	defer cancel()
	var pod *corev1.Pod
	err = wait.PollUntilContextCancel(c, pollInterval, true, func(ctx context.Context) (bool, error) {
		pod, err = client.CoreV1().Pods(e.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		switch pod.Status.Phase {
		case corev1.PodRunning:
			return true, nil
		case corev1.PodFailed, corev1.PodSucceeded:
			return false, fmt.Errorf("the Pod ended (%s): %s", pod.Status.Phase, waitingReason(pod))
		}
		return false, stuck(pod)
	})
	if err != nil && pod != nil && c.Err() != nil {
		return fmt.Errorf("starting Pod %s: %w (%s)", name, err, waitingReason(pod))
	}
	if err != nil {
		return fmt.Errorf("starting Pod %s: %w", name, err)
	}
	return nil
}

// Reasons the kubelet gives for a container that will not start unless
// something changes: its image cannot be had, or it cannot be made or run.
var (
	imageReasons  = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"}
	brokenReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}
)

// stuck returns an error when a container of the Pod waits for a reason
// that waiting does not end, so that Start fails at once rather than at
// its deadline; one wrapping engine.ErrImageUnavailable for an image.
func stuck(pod *corev1.Pod) error {
	for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if s.State.Waiting == nil {
			continue
		}
		switch reason := s.State.Waiting.Reason; {
		case slices.Contains(imageReasons, reason):
			return fmt.Errorf("%w: the %s container's image %s: %s %s", engine.ErrImageUnavailable, s.Name, s.Image, reason, s.State.Waiting.Message)
		case slices.Contains(brokenReasons, reason):
			return fmt.Errorf("the %s container cannot start: %s %s", s.Name, reason, s.State.Waiting.Message)
		}
	}
	return nil
}

// waitingReason says why the Pod's containers are not running, as the
// kubelet reports it (ErrImagePull, CrashLoopBackOff...).
func waitingReason(pod *corev1.Pod) string {
	reason := string(pod.Status.Phase)
	for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		switch {
		case s.State.Waiting != nil && s.State.Waiting.Reason != "":
			reason += fmt.Sprintf("; %s: %s %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Terminated != nil && s.State.Terminated.ExitCode != 0:
			reason += fmt.Sprintf("; %s exited %d: %s %s", s.Name, s.State.Terminated.ExitCode, s.State.Terminated.Reason, s.State.Terminated.Message)
		}
	}
	return reason
}

// AttachCommand is the kubectl command that opens a shell in the Pod.
func (e *Engine) AttachCommand(name string) string {
	kubeconfig := ""
	if e.opts.Kubeconfig != "" {
		kubeconfig = " --kubeconfig " + e.opts.Kubeconfig
	}
	return fmt.Sprintf("kubectl%s -n %s exec -it %s -c %s -- sh", kubeconfig, e.opts.Namespace, name, workspaceContainer)
}

// Running reports whether the Pod exists and runs.
func (e *Engine) Running(ctx context.Context, name string) (exists, running bool, err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return false, false, err
	}
	defer end(&err)
	pod, err := client.CoreV1().Pods(e.opts.Namespace).Get(c, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("reading Pod %s: %w", name, err)
	}
	return true, pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil, nil
}

// Remove deletes the Pod at once and waits until it is gone, so that its
// name can be used again; a missing Pod is not an error.
func (e *Engine) Remove(ctx context.Context, name string) (err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	return e.remove(c, client, name)
}

// remove deletes the Pod and waits until it is gone.
func (e *Engine) remove(ctx context.Context, client k8s.Interface, name string) error {
	pods := client.CoreV1().Pods(e.opts.Namespace)
	err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting Pod %s: %w", name, err)
	}
	err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for Pod %s to go: %w", name, err)
	}
	return nil
}

// List returns the Pods, and the PersistentVolumeClaims of workspaces
// (claim.go) whose Pod is gone, with the label managedLabel=true.
func (e *Engine) List(ctx context.Context, managedLabel string) (_ []engine.Listed, err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	pods, err := client.CoreV1().Pods(e.opts.Namespace).List(c, metav1.ListOptions{LabelSelector: managedLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	var out []engine.Listed
	names := map[string]bool{}
	for _, p := range pods.Items {
		out = append(out, engine.Listed{Name: p.Name, Labels: objectLabels(p.ObjectMeta)})
		names[p.Name] = true
	}
	claims, err := e.listClaims(c, client, managedLabel)
	for _, claim := range claims {
		if !names[claim.Name] {
			out = append(out, claim)
		}
	}
	return out, err
}

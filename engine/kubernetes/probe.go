package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// The engine makes Pods, whose network a policy cuts off.
var _ engine.NetworkPolicer = (*Engine)(nil)

// AllowFlag is the flag that lets workspaces be made where the cluster
// does not enforce the deny-all NetworkPolicy.
const AllowFlag = "--allow-unenforced-network-policy"

// ErrPolicyUnenforced is wrapped by Create's error when the probe found the
// cluster not enforcing NetworkPolicies and AllowFlag is not set.
var ErrPolicyUnenforced = errors.New("the cluster does not enforce NetworkPolicies")

// The probe: a short-lived Pod, selected by the deny-all policy, that runs
// `wink-mcp probe-network` against an address a Pod reaches without
// policies.
const (
	// ProbeCommand is the hidden role of the binary the probe Pod runs,
	// with its address and a settle time: it exits ProbeBlocked once its
	// connects have failed (within ProbeDialTimeout each) for ProbeConfirm
	// in a row, ProbeConnected when one gets through after the settle time.
	ProbeCommand = "probe-network"
	// AwaitCutOffCommand is the hidden role of the binary a workspace Pod's
	// cut-off init container runs, with ProbeCommand's arguments: it exits
	// 0 where ProbeCommand says blocked, 1 where it says connected. So the workspace container starts only once the
	// enforcer has written the Pod's rules.
	AwaitCutOffCommand = "await-cut-off"
	// ProbeConnected and ProbeBlocked are the exit codes of ProbeCommand.
	ProbeConnected, ProbeBlocked = 0, 1
	// ProbeDialTimeout bounds each of the probe's connects.
	ProbeDialTimeout = 3 * time.Second
	// ProbeSettle is how long the probe Pod keeps connecting before it says
	// connected: enforcers such as kube-router write a new Pod's rules when
	// they see its address, a moment after it started, so a connect that
	// gets through at first proves nothing yet.
	ProbeSettle = 10 * time.Second
	// ProbeConfirm is how long the probe's connects must keep failing for
	// it to say blocked: kube-router, rewriting a Pod's rules when a policy
	// changes, was seen here to refuse a connect for a moment in a
	// namespace whose policies let the Pod out (and, at times, for good:
	// the cut-off init container of each workspace Pod is what catches a
	// probe fooled that way).
	ProbeConfirm = time.Second
	// ProbeRetryInterval is the pause between the probe's connects.
	ProbeRetryInterval = 200 * time.Millisecond
	// probeLabel marks the probe Pods, so that a leftover one is deleted.
	probeLabel = "io.wink-mcp.network-probe"
	// probePrefix begins each probe Pod's name.
	probePrefix = "wink-mcp-network-probe-"
	// probeDeadline is the probe Pod's activeDeadlineSeconds: a probe Pod
	// older than it is a leftover.
	probeDeadline = 60 * time.Second
	// kubeletPort is the kubelet's port on a node, the probe's address
	// when the API server's endpoint cannot be read.
	kubeletPort = 10250
)

// verdict returns nil when workspaces may be made under the policy n, else
// an error wrapping ErrPolicyUnenforced that names AllowFlag.
func verdict(n engine.NetworkPolicy) error {
	if n.Enforced || n.Allowed {
		return nil
	}
	return fmt.Errorf("%w: a probe Pod under the deny-all NetworkPolicy %s connected to %s, so a workspace Pod could reach anything "+
		"the cluster's network reaches. Run a network plugin that enforces NetworkPolicies, remove any other NetworkPolicy of the namespace "+
		"that allows the workspace Pods' traffic (policies add up), or pass %s (WINK_ALLOW_UNENFORCED_NETWORK_POLICY) "+
		"to make workspaces with the cluster's network anyway", ErrPolicyUnenforced, PolicyName, n.Target, AllowFlag)
}

// NetworkUnenforcedWarning is the warning logged, and doctor's, when the
// cluster does not enforce the policy and AllowFlag lets workspaces be made.
const NetworkUnenforcedWarning = "NETWORK POLICIES ARE NOT ENFORCED: " + AllowFlag + " makes workspace Pods that reach the cluster's network"

// NetworkPolicy ensures the deny-all NetworkPolicy and probes, once per
// Engine (the first answer is kept), whether the cluster enforces it.
func (e *Engine) NetworkPolicy(ctx context.Context) (engine.NetworkPolicy, error) {
	e.prepMu.Lock()
	defer e.prepMu.Unlock()
	if e.network != nil {
		return *e.network, nil
	}
	client, err := e.connect()
	if err != nil {
		return engine.NetworkPolicy{}, err
	}
	c, cancel := context.WithTimeout(ctx, e.opts.StartTimeout)
	defer cancel()
	if err := e.ensurePolicy(c, client); err != nil {
		return engine.NetworkPolicy{}, err
	}
	e.sweepProbes(c, client)
	target, err := probeTarget(c, client)
	if err != nil {
		return engine.NetworkPolicy{}, err
	}
	begin := time.Now()
	connected, err := e.probe(c, client, target)
	if err != nil {
		return engine.NetworkPolicy{}, fmt.Errorf("probing whether the cluster enforces NetworkPolicies: %w", err)
	}
	n := engine.NetworkPolicy{Name: "NetworkPolicy " + e.opts.Namespace + "/" + PolicyName, Enforced: !connected, Target: target,
		Allowed: connected && e.opts.AllowUnenforcedNetworkPolicy, Flag: AllowFlag}
	e.log.Info("network policy probed", "policy", PolicyName, "target", target, "enforced", n.Enforced,
		"duration_ms", time.Since(begin).Milliseconds())
	if n.Allowed {
		e.log.Warn(NetworkUnenforcedWarning, "policy", PolicyName, "target", target)
	}
	e.network = &n
	return n, nil
}

// probeTarget returns an address a Pod reaches when no policy stops it:
// the API server's endpoint (the `kubernetes` Service's EndpointSlice),
// else a node's InternalIP and kubelet port.
func probeTarget(ctx context.Context, client k8s.Interface) (string, error) {
	slices, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx,
		metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err == nil {
		for _, s := range slices.Items {
			if len(s.Ports) == 0 || s.Ports[0].Port == nil {
				continue
			}
			for _, ep := range s.Endpoints {
				if len(ep.Addresses) > 0 {
					return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*s.Ports[0].Port))), nil
				}
			}
		}
	}
	nodes, nodeErr := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if nodeErr == nil {
		for _, n := range nodes.Items {
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					return net.JoinHostPort(a.Address, strconv.Itoa(kubeletPort)), nil
				}
			}
		}
	}
	return "", fmt.Errorf("finding an address for the network probe: the API server's EndpointSlice (%v), a node's InternalIP (%v)", err, nodeErr)
}

// probe runs a probe Pod against target and reports whether it connected;
// the Pod is deleted whatever happens.
func (e *Engine) probe(ctx context.Context, client k8s.Interface, target string) (connected bool, err error) {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	e.mu.Lock()
	instance := e.instance
	e.mu.Unlock()
	pod := probePod(probePrefix+hex.EncodeToString(suffix), target, instance, e.opts)
	pods := client.CoreV1().Pods(e.opts.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return false, fmt.Errorf("creating probe Pod %s: %w", pod.Name, err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.APITimeout)
		defer cancel()
		if rmErr := e.remove(c, client, pod.Name); rmErr != nil {
			e.log.Warn("removing the network probe Pod", "pod", pod.Name, "err", rmErr)
		}
	}()
	var got *corev1.Pod
	err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		got, err = pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed {
			return true, nil
		}
		return false, stuck(got)
	})
	if err != nil {
		return false, fmt.Errorf("waiting for probe Pod %s: %w", pod.Name, err)
	}
	return probeOutcome(got)
}

// probeOutcome reads the exit code of an ended probe Pod.
func probeOutcome(pod *corev1.Pod) (connected bool, err error) {
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated == nil {
			continue
		}
		switch s.State.Terminated.ExitCode {
		case ProbeConnected:
			return true, nil
		case ProbeBlocked:
			return false, nil
		}
		return false, fmt.Errorf("probe Pod %s exited %d: %s", pod.Name, s.State.Terminated.ExitCode, s.State.Terminated.Message)
	}
	return false, fmt.Errorf("probe Pod %s ended without an exit code: %s", pod.Name, waitingReason(pod))
}

// probeResources bound the probe Pod, for namespaces whose quota wants
// limits: a connect needs little.
var probeResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}

// probePod returns the probe Pod: the workspace Pods' managed label (so the
// deny-all policy selects it), hardened as they are, from the agent image.
// With the instance whose Lease the engine holds, it carries the instance
// label too, so that the orphan sweep deletes it, as it does the
// instance's workspace Pods, once the Lease expires.
func probePod(name, target, instance string, opts Options) *corev1.Pod {
	labels := map[string]string{opts.ManagedLabel: "true", probeLabel: "true"}
	if instance != "" && opts.InstanceLabel != "" {
		labels[opts.InstanceLabel] = instance
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: opts.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To(int64(probeDeadline / time.Second)),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			RuntimeClassName:              runtimeClass(opts),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](65534), RunAsGroup: ptr.To[int64](65534), RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           opts.AgentImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{agentImagePath, ProbeCommand, target, ProbeSettle.String()},
				Resources:       corev1.ResourceRequirements{Limits: probeResources, Requests: probeResources},
				SecurityContext: &corev1.SecurityContext{
					Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// runtimeClass returns the Pods' runtimeClassName, nil for the default.
func runtimeClass(opts Options) *string {
	if opts.RuntimeClass == "" {
		return nil
	}
	return ptr.To(opts.RuntimeClass)
}

// sweepProbes deletes the probe Pods older than probeDeadline: those of a
// server that ended before it could delete its own, and doctor's, which
// hold no Lease for the orphan sweep to judge them by.
func (e *Engine) sweepProbes(ctx context.Context, client k8s.Interface) {
	pods, err := client.CoreV1().Pods(e.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: probeLabel + "=true"})
	if err != nil {
		e.log.Warn("listing leftover network probe Pods", "err", err)
		return
	}
	for _, p := range pods.Items {
		if time.Since(p.CreationTimestamp.Time) < probeDeadline {
			continue
		}
		if err := client.CoreV1().Pods(e.opts.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
			e.log.Warn("deleting a leftover network probe Pod", "pod", p.Name, "err", err)
			continue
		}
		e.log.Info("leftover network probe Pod deleted", "pod", p.Name)
	}
}

package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/engine"
)

// What the checks say when each workspace is a Kubernetes Pod
// (engine.Service.Pods): the lines that judge a Podman host's runtime,
// storage, rlimits and network would claim what a Pod does not have.

// podRuntime says which runtime class the Pods use and which limits the
// kubelet enforces: memory, CPU and ephemeral storage, not the pids limit.
func podRuntime(info engine.Description) Result {
	class := "the cluster's default runtime class"
	if info.DefaultRuntime != "" {
		class = "runtime class " + info.DefaultRuntime
	}
	return Result{Status: OK, Detail: class + "; memory, CPU and ephemeral-storage limits set on each Pod, enforced by its node's kubelet; " +
		"no pids limit of wink-mcp's (--pids-limit is no Pod setting: the node's kubelet has one podPidsLimit for every Pod)"}
}

// podUlimits says that the rlimits are no Pod settings.
func podUlimits() Result {
	return Result{Status: OK, Detail: "not set: --nofile and --nproc are no Pod settings; a Pod's rlimits are its container runtime's defaults"}
}

// podNetwork says whether the deny-all policy of the Pods is enforced, as
// the engine's probe found: ok when it is, a warning when it is not and the
// operator allowed it, a failure otherwise (every workspace is refused).
func (d *doctor) podNetwork(ctx context.Context) Result {
	policer, ok := d.cfg.Engine.(engine.NetworkPolicer)
	if !ok {
		return Result{Status: Fail, Detail: "the engine makes Pods but cannot say what cuts off their network",
			Fix: "report it: an engine of Pods must implement engine.NetworkPolicer"}
	}
	n, err := policer.NetworkPolicy(ctx)
	if err != nil {
		return Result{Status: Fail, Detail: "cannot ensure or probe the Pods' network policy: " + err.Error(),
			Fix: "check the engine's permissions on NetworkPolicies and Pods in its namespace, and that the agent image runs"}
	}
	d.network = &n
	enforce := "run a network plugin that enforces NetworkPolicies (Calico, Cilium, kube-router...) and remove any policy of the namespace that allows the Pods' traffic"
	switch {
	case n.Enforced:
		return Result{Status: OK, Detail: fmt.Sprintf("each Pod's eth0 is cut off by %s (deny-all), enforced: a probe Pod under it could not reach %s", n.Name, n.Target)}
	case n.Allowed:
		return Result{Status: Warn, Detail: fmt.Sprintf("NOT ENFORCED (%s): a probe Pod under %s reached %s, so each workspace Pod reaches the cluster's network", n.Flag, n.Name, n.Target),
			Fix: enforce}
	}
	return Result{Status: Fail, Detail: fmt.Sprintf("every workspace would be refused: a probe Pod under %s reached %s, so the cluster does not enforce it, "+
		"or another NetworkPolicy of the namespace allows the Pods' traffic", n.Name, n.Target),
		Fix: enforce + ", or pass " + n.Flag + " to accept workspace Pods with the cluster's network"}
}

// podPermissions says which calls of the engine its credentials may not
// make, as the engine's service answers (engine.PermissionChecker): a
// failure naming each missing one and the rule to add, a warning for
// calls the engine does without.
func (d *doctor) podPermissions(ctx context.Context) Result {
	if d.info == nil {
		return skipped("the service")
	}
	checker, ok := d.cfg.Engine.(engine.PermissionChecker)
	if !ok {
		return Result{Status: OK, Detail: "not checked: the engine cannot ask its service"}
	}
	r, err := checker.CheckPermissions(ctx)
	if err != nil {
		return Result{Status: Fail, Detail: "cannot ask which calls are allowed: " + err.Error(),
			Fix: "allow the account to create selfsubjectaccessreviews (authorization.k8s.io; every authenticated user may by default)"}
	}
	switch {
	case len(r.Missing) > 0:
		return Result{Status: Fail, Detail: fmt.Sprintf("missing %s: %s", r.Scope, strings.Join(r.Missing, "; ")), Fix: r.Fix}
	case len(r.Optional) > 0:
		return Result{Status: Warn, Detail: fmt.Sprintf("every call the engine needs %s is allowed; not: %s", r.Scope, strings.Join(r.Optional, "; ")),
			Fix: "grant them as docs/kubernetes.md's Permissions says, or accept what the engine does without them"}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("all %d calls the engine makes are allowed (SelfSubjectAccessReview), %s", r.Checked, r.Scope)}
}

// podNetworkWords says what the container check found of a Pod's network.
func podNetworkWords(n *engine.NetworkPolicy) string {
	if n.Enforced {
		return "its eth0 cut off by " + n.Name
	}
	return "its eth0 NOT cut off (" + n.Name + " unenforced, " + n.Flag + ")"
}

// pods reports whether each workspace is a Kubernetes Pod.
func (d *doctor) pods() bool { return d.cfg.Engine != nil && d.cfg.Engine.Service().Pods }

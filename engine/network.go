package engine

import "context"

// NetworkPolicy is what an engine found of the policy that cuts its
// containers' network device off (Service.Pods).
type NetworkPolicy struct {
	// Name names the policy and where it is ("NetworkPolicy wink/deny-all").
	Name string
	// Enforced is true when a probe under the policy could not connect to
	// Target: the network enforces it.
	Enforced bool
	// Target is the address the probe tried.
	Target string
	// Allowed is true when the engine makes containers although the policy
	// is not enforced, because the operator set Flag.
	Allowed bool
	// Flag is the setting that allows an unenforced policy.
	Flag string
}

// NetworkPolicer is implemented by an engine whose containers have a
// network device (Service.Pods) that a policy cuts off.
type NetworkPolicer interface {
	// NetworkPolicy ensures the policy and says whether the network
	// enforces it; it probes once and keeps the answer.
	NetworkPolicy(ctx context.Context) (NetworkPolicy, error)
}

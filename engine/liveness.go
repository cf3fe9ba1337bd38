package engine

import (
	"context"
	"errors"
)

// ErrNotHeld is wrapped by InstanceHold.Held's error when the instance
// could not renew its liveness for the whole of its duration: other
// servers may now take it for dead and delete its containers.
var ErrNotHeld = errors.New("this server's liveness was not renewed in time")

// InstanceLiveness is implemented by an engine whose service holds the
// liveness of wink-mcp server instances (a cluster's Leases), so that
// servers on different machines, or replicas that come and go under other
// host names, agree which instances are alive. The workspace manager then
// judges a container an orphan by its instance's liveness there, whatever
// host made it, instead of by a lock file on this host.
type InstanceLiveness interface {
	// HoldInstance declares the instance alive in the engine's service at
	// once, failing when it cannot, and keeps renewing that in the
	// background until the hold is released.
	HoldInstance(ctx context.Context, instance string) (InstanceHold, error)
	// InstanceAlive reports whether the instance holds its liveness: false
	// when it never did, released it or stopped renewing it for longer
	// than its duration; an error when it cannot tell.
	InstanceAlive(ctx context.Context, instance string) (bool, error)
	// ForgetDeadInstances deletes what dead instances left of their
	// liveness, those it finds expired and those of known, which the
	// caller knows dead by other means, and returns their IDs.
	ForgetDeadInstances(ctx context.Context, known []string) ([]string, error)
}

// InstanceHold is an instance's liveness, held by InstanceLiveness.
// Its methods are safe for concurrent use.
type InstanceHold interface {
	// Held returns nil while the hold has been renewed within its
	// duration, else an error wrapping ErrNotHeld saying since when.
	Held() error
	// Release stops renewing and deletes the hold, so that other servers
	// see the instance gone at once.
	Release(ctx context.Context) error
}

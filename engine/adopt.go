package engine

import (
	"context"
	"time"
)

// ContainerAdopter is implemented by an engine whose containers any
// server using it can drive (the Kubernetes engine: a Pod is reached
// through the API server, from any replica). A server that takes a kept
// workspace over from another (KeptAsk.OnWanted) drives the container its
// last holder left running, rather than making a new one: its files, its
// running jobs and its open ports go on.
type ContainerAdopter interface {
	// Adopt finds a running container, not being removed, whose label
	// key is value, sets its labels to labels (its new owner's, so that
	// only the new owner's death lets a sweep remove it), and returns its
	// name; "" and no error when there is none.
	Adopt(ctx context.Context, key, value string, labels map[string]string) (string, error)
	// AwaitsAdoption reports whether a container a dead server left on
	// the kept workspace name (roaming: the roaming workspace name,
	// KeptAsk.Roaming) is to stay for the workspace's next holder to
	// adopt rather than be swept: its last holder's lease was renewed
	// within idle, or a new holder took it a moment ago.
	AwaitsAdoption(ctx context.Context, name string, roaming bool, idle time.Duration) (bool, error)
}

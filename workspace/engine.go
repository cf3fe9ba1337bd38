package workspace

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
)

// AgentPath is where the wink-mcp binary is mounted, read-only, inside every
// container; it runs there as the container's init.
const AgentPath = "/.wink/wink-mcp"

// containerSpec is everything that makes a session's container, independent
// of the engine that creates it.
type containerSpec struct {
	Name         string
	Image        string
	Labels       map[string]string
	User         string
	KeepID       bool // run in a keep-id user namespace (rootless Podman)
	SELinux      bool // relabel the bind mounts for SELinux
	WorkspaceDir string
	Mounts       []hostMount
	AgentBinary  string
	Limits
	// Unlimited lists, comma-separated, the cgroup controllers whose
	// limits the host cannot enforce and Config.AllowUnenforcedLimits
	// lets the container go without (hostFacts.Unlimitable).
	Unlimited string
}

// limited says whether the container gets the limit of a cgroup controller.
func (c containerSpec) limited(controller string) bool {
	return !slices.Contains(strings.Split(c.Unlimited, ","), controller)
}

// hostMount is a host folder mounted into a container: read-only, or as
// an overlay whose changes collect in Upper.
type hostMount struct {
	Source, Destination string
	ReadOnly            bool
	Upper, Work         string
}

// listedContainer is one container found by engine.List.
type listedContainer struct {
	Name   string
	Labels map[string]string
}

// errNameInUse is returned by engine.Create when the name is taken.
var errNameInUse = errors.New("container name already in use")

// engine is what the manager needs from a container engine. podmanEngine
// implements it against the Podman service; unit tests use a fake that runs
// the real agent in-process.
type engine interface {
	// Host returns what specs depend on about the engine's host; settled
	// is false when the facts are an earlier process's, not yet confirmed.
	Host(ctx context.Context) (h hostFacts, settled bool, err error)
	// SettledHost returns the host facts as the engine gives them now.
	SettledHost(ctx context.Context) (hostFacts, error)
	// EnsureImage returns the first of choices the engine has, or pulls
	// the last when it has none (see Config.ImageChoices).
	EnsureImage(ctx context.Context, choices []string) (image string, err error)
	// Create creates a container; it returns errNameInUse if the name is taken.
	Create(ctx context.Context, spec containerSpec) error
	// Start starts a created container.
	Start(ctx context.Context, name string) error
	// Running reports whether the container exists and whether it runs.
	Running(ctx context.Context, name string) (exists, running bool, err error)
	// Remove force-removes a container and its anonymous volumes; a missing
	// container is not an error.
	Remove(ctx context.Context, name string) error
	// List returns every container labelled LabelManaged=true.
	List(ctx context.Context) ([]listedContainer, error)
	// OpenChannel starts a relay in the container and returns a stream to
	// its agent. Closing the stream ends the relay.
	OpenChannel(ctx context.Context, name string) (io.ReadWriteCloser, error)
}

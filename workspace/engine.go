package workspace

import (
	"context"
	"errors"
	"io"
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
	// EnsureImage makes sure the image is present, pulling it if needed.
	EnsureImage(ctx context.Context, image string) error
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

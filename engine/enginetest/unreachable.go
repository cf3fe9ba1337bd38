// Package enginetest has engines for the tests of the packages above the
// engine, which must not link a real one (see package engine): they test
// what those packages make of an engine's answers, while the engines'
// own packages and the integration tests test the engines themselves.
package enginetest

import (
	"context"
	"fmt"
	"io"

	"github.com/wink-mcp/wink-mcp/engine"
)

// Unreachable is an engine.Engine whose service never answers: every call
// that would reach it returns Err. Its zero value is ready to use.
type Unreachable struct {
	// URI is the service it says it tried.
	URI string
	// Remote says the service is on another host.
	Remote bool
	// BoundsDisk says the service bounds a container's files itself.
	BoundsDisk bool
	// Pods says each container would be a Kubernetes Pod.
	Pods bool
}

var _ engine.Engine = Unreachable{}

// unreachable is the engine-neutral sentinel in this engine's words.
var unreachable = engine.Worded(engine.ErrUnreachable, "cannot reach the test engine")

// Err returns the error of every call: it wraps engine.ErrUnreachable,
// names URI and ends with ServiceFix.
func (u Unreachable) Err() error {
	return fmt.Errorf("%w (tried %s). %s", unreachable, u.URI, u.ServiceFix())
}

// Service returns URI as the address, Remote, BoundsDisk and Pods.
func (u Unreachable) Service() engine.Service {
	return engine.Service{Address: u.URI, Remote: u.Remote, BoundsDisk: u.BoundsDisk, Pods: u.Pods}
}

// ServiceFix returns how to start the test engine's service.
func (u Unreachable) ServiceFix() string { return "start the test engine's service" }

// AttachCommand returns the command a person would run; it runs nothing.
func (u Unreachable) AttachCommand(name string) string { return "test-engine exec -it " + name + " sh" }

// Describe returns Err.
func (u Unreachable) Describe(context.Context) (engine.Description, error) {
	return engine.Description{}, u.Err()
}

// Host returns Err.
func (u Unreachable) Host(context.Context) (engine.HostFacts, bool, error) {
	return engine.HostFacts{}, false, u.Err()
}

// SettledHost returns Err.
func (u Unreachable) SettledHost(context.Context) (engine.HostFacts, error) {
	return engine.HostFacts{}, u.Err()
}

// EnsureImage returns Err.
func (u Unreachable) EnsureImage(context.Context, []string) (string, error) { return "", u.Err() }

// ChooseImage returns Err.
func (u Unreachable) ChooseImage(context.Context, []string) (string, bool, error) {
	return "", false, u.Err()
}

// ImageID returns Err.
func (u Unreachable) ImageID(context.Context, string) (string, error) { return "", u.Err() }

// Commit returns Err.
func (u Unreachable) Commit(context.Context, string, string, map[string]string) error {
	return u.Err()
}

// WrittenBytes returns Err.
func (u Unreachable) WrittenBytes(context.Context, string) (int64, error) { return 0, u.Err() }

// ClearDirs returns Err.
func (u Unreachable) ClearDirs(context.Context, string, []string) error { return u.Err() }

// Images returns Err.
func (u Unreachable) Images(context.Context, string) ([]engine.Image, error) { return nil, u.Err() }

// RemoveImage returns Err.
func (u Unreachable) RemoveImage(context.Context, string) error { return u.Err() }

// Create returns Err.
func (u Unreachable) Create(context.Context, engine.Spec) error { return u.Err() }

// Start returns Err.
func (u Unreachable) Start(context.Context, string) error { return u.Err() }

// Running returns Err.
func (u Unreachable) Running(context.Context, string) (bool, bool, error) {
	return false, false, u.Err()
}

// Remove returns Err.
func (u Unreachable) Remove(context.Context, string) error { return u.Err() }

// RemoveWorkspace returns Err.
func (u Unreachable) RemoveWorkspace(context.Context, string) error { return u.Err() }

// List returns Err.
func (u Unreachable) List(context.Context, string) ([]engine.Listed, error) { return nil, u.Err() }

// CopyIn returns Err.
func (u Unreachable) CopyIn(context.Context, string, string, io.Reader) error { return u.Err() }

// CopyOut returns Err.
func (u Unreachable) CopyOut(context.Context, string, string, io.Writer) error { return u.Err() }

// OpenChannel returns Err.
func (u Unreachable) OpenChannel(context.Context, string) (io.ReadWriteCloser, error) {
	return nil, u.Err()
}

// OpenTunnel returns Err.
func (u Unreachable) OpenTunnel(context.Context, string) (io.ReadWriteCloser, error) {
	return nil, u.Err()
}

package tools

import (
	"log/slog"
	"reflect"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Options are the limits the tools take from the server's configuration.
type Options struct {
	// MaxCommandTimeout bounds podman_shell's timeout_seconds; zero means
	// DefaultMaxCommandTimeout.
	MaxCommandTimeout time.Duration
	// Profiles are the profiles sessions may choose; without any there is
	// no workspace_profile tool.
	Profiles []Profile
	// Detected says in a sentence what the server found in the host
	// folders about the toolchain they need ("" when it did not look);
	// workspace_profile's description ends with it.
	Detected string
}

// Interfaces are the interfaces the tools take of a session's workspace,
// each tool one or more of them: the workspace WorkspaceFor returns, or
// one of its parts (Composite), must implement every one, or the tools
// that take the missing ones answer with an error.
func Interfaces() []reflect.Type {
	return []reflect.Type{
		reflect.TypeFor[FileReader](), reflect.TypeFor[FileWriter](), reflect.TypeFor[FileSearcher](),
		reflect.TypeFor[Commands](), reflect.TypeFor[Container](), reflect.TypeFor[JobStarter](),
		reflect.TypeFor[PythonRunner](), reflect.TypeFor[JobControl](),
		reflect.TypeFor[FolderChanges](), reflect.TypeFor[PortPreviews](), reflect.TypeFor[Checkpointer](),
		reflect.TypeFor[Handoffs](), reflect.TypeFor[Forks](), reflect.TypeFor[StateReporter](), reflect.TypeFor[ProfileSwitcher](), reflect.TypeFor[EgressPolicy](), reflect.TypeFor[Services](), reflect.TypeFor[Digests](),
	}
}

// All returns every tool, in the order clients list them.
func All(workspaceFor WorkspaceFor, log *slog.Logger, opts Options) ([]server.ServerTool, error) {
	maxTimeout := opts.MaxCommandTimeout
	if maxTimeout <= 0 {
		maxTimeout = DefaultMaxCommandTimeout
	}
	constructors := []func() (server.ServerTool, error){
		func() (server.ServerTool, error) { return Ls(workspaceFor) },
		func() (server.ServerTool, error) { return ReadFile(workspaceFor) },
		func() (server.ServerTool, error) { return WriteFile(workspaceFor) },
		func() (server.ServerTool, error) { return EditFile(workspaceFor) },
		func() (server.ServerTool, error) { return Glob(workspaceFor) },
		func() (server.ServerTool, error) { return Grep(workspaceFor) },
		func() (server.ServerTool, error) { return Rm(workspaceFor) },
		func() (server.ServerTool, error) { return Shell(workspaceFor, log, maxTimeout) },
		func() (server.ServerTool, error) { return Job(workspaceFor) },
		func() (server.ServerTool, error) { return Python(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceChanges(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceDiff(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspacePort(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceEgress(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceService(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceCheckpoint(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceCheckpoints(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceRestore(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceCheckpointDiff(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceCheckpointDelete(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceHandoff(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceAttach(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceFork(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceInfo(workspaceFor) },
		func() (server.ServerTool, error) { return WorkspaceDigest(workspaceFor) },
	}
	if len(opts.Profiles) > 0 {
		constructors = append(constructors, func() (server.ServerTool, error) { return WorkspaceProfile(workspaceFor, opts.Profiles, opts.Detected) })
	}
	out := make([]server.ServerTool, 0, len(constructors))
	for _, c := range constructors {
		t, err := c()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

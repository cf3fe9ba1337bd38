// Package workspace gives each MCP session its own sandbox: a hardened
// container, created on the first call that needs it by a container engine
// (package engine; Podman's is engine/podman), with the session's files
// under /workspace and the wink-mcp agent as its init. It hides the engine
// from the tools: they see a Session, and the parts it wires (Parts),
// through the small interfaces they define (package tools).
//
// The Manager maps sessions to containers, removes idle ones, recreates dead
// ones, and at start-up removes containers left by wink-mcp servers that
// died, never those of a server that is still running.
//
// This package keeps a session's life cycle (create, start, verify, stop,
// remove, and the gate) and wires the rooms: the parts that own state and
// a lock of their own live in packages under workspace/, each reaching its
// session only through what it is given (a Deps of functions, or its
// arguments), never by importing workspace:
//
//   - workspace/ports: a session's port previews (ports.Room);
//   - workspace/pool: the warm pool of containers made ahead of need
//     (pool.Pool);
//   - workspace/disk: a session directory's own filesystem, a loop-mounted
//     ext4 image (no state and no lock: a session's own disk is mounted
//     and unmounted under Session.mu);
//   - workspace/egressrecord: a kept workspace's egress count, kept in its
//     record while a session has it (egressrecord.Recorder);
//   - workspace/capture: a checkpoint's snapshot of /workspace, read
//     through the agent into the store (capture.State), under the gate;
//   - workspace/touched: the files a session's tools and commands
//     touched (touched.Snapshot);
//   - workspace/checkpoint: a session's checkpoints and restores, and the
//     journal of a restore that did not finish (checkpoint.Room, which
//     serves the checkpoint tools itself);
//   - workspace/folders: what a session changed in its mounted host
//     folders, listed and diffed (folders.Part; no state and no lock: a
//     read of the changes takes the mounts' pullMu when the copies are
//     on the Podman host);
//   - workspace/difftext: the cap on a diff's size (no state and no
//     lock);
//   - workspace/files: the files as the file tools see them, each call
//     one of the session's (files.Part; no state and no lock of its own);
//   - workspace/jobs: the background jobs started in the container, and
//     what the session asks of them under Session.mu before its
//     container goes (jobs.Part; no lock: whether one was started is an
//     atomic flag);
//   - workspace/watch: the agent's watch of /workspace, its status, and
//     the changes processes make, recorded in the touched files
//     (watch.Watcher; no lock: its status is an atomic pointer);
//   - workspace/mounts: the host folders a session shows, resolved
//     against the allowed roots, their directories and copies in the
//     session directory, their changes and the patches that export them
//     (no state and no lock: a session's own, sessionMounts in this
//     package, fixes its mounts once, under Session.mu, as a step of its
//     container's life cycle);
//   - workspace/images: the profile images a setup builds (names, labels,
//     look-up, pruning), the builds in progress (images.Builds) and the
//     images last found for each profile (images.Known), held by the
//     manager's images.Room, which also says which image a session runs
//     or will run (a setup's session is still made by the manager);
//   - workspace/keep: a kept workspace's records on the cache disk, its
//     name and its directory's layout (no state and no lock: the lock
//     file that says a session owns it is taken here, in claimWorkspace).
//
// The parts of a session that work on the state its life cycle owns stay
// in this package, each holding its session and taking its locks as a
// Session method would: handoffs (handoff and attach, and the workspaces
// the session handed to another process while they wait) and
// profileSwitch (a change of profile). Session.Parts lists them for the
// tools.
//
// Locks are taken in this order, never against it, so that no two
// goroutines can each hold a lock the other waits for:
//
//  1. a session's gate (the files and processes a call, a checkpoint or a
//     restore shares or takes whole), or its mounts' pullMu
//     (sessionMounts.pullMu; never both);
//  2. Session.mu;
//  3. Manager.mu, under which the server's callbacks (the park limit,
//     CountParked's count) take only locks of their own;
//  4. the warm pool's, pool.Pool.mu (Manager.Session takes an entry under
//     Manager.mu);
//  5. the leaves, which take no other lock while held: a session's
//     checkpoints room's (checkpoint.Room.mu), a session's ports room's
//     (ports.Room.mu: its tunnel is reached before the lock, through
//     Session.mu), the touched files' record
//     (touched.Snapshot.mu), a capture's index (capture.State.mu), the
//     gate's list of running commands, the builds in progress
//     (images.Builds.mu), a build's status line (images.Build.status),
//     the known images' (images.Known.mu), Manager.rootsMu, a
//     setup's refusals (images.SetupRefusals.mu), a progress relay's
//     (latestOnly), and a kept workspace's egress recorder's
//     (egressrecord.Recorder.mu, then its egress.Meter's), and the
//     forks' ledger (forkLedger.mu, taken under Session.mu by a fork,
//     which reads the session's meter and writes the forks' records
//     under it).
//
// So a session may reach into the manager (its end retries a failed
// removal through it), and the manager never waits for a session's lock
// while it holds its own: what it needs of a session it reads before (a
// handoff's meter), or from what the session left readable without it (a
// pooled container's channel, read by makeWarm under the entry's lock
// before the pool takes its own). A room never takes a session's lock
// while it holds its own: what it calls under it (the log, the session's
// or entry's name) takes none. A lock may be tried against the order
// (TryLock, TryAcquire: the idle reaper and its automatic checkpoint),
// since a try never waits. The unit tests run under -race, and
// lockorder_test.go drives crowds of sessions through the transitions
// that take more than one of these.
package workspace

import (
	"errors"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/wspath"
)

// Errors a Session returns; tools turn them into messages for the model.
var (
	// ErrSessionEnded means the session is over and its workspace gone.
	ErrSessionEnded = errors.New("the session has ended")
	// ErrWorkspaceLost means the channel to the container ended during the
	// call (the container or the Podman service stopped, or froze); the next
	// call reconnects, or starts the container again.
	ErrWorkspaceLost = errors.New("the connection to the workspace container ended during the call, so its result is lost; " +
		"the next call reconnects, starting the container again if it stopped (files in /workspace are kept)")
)

// Root is where the workspace appears inside the container: wspath.Root,
// which every path a client gives is relative to.
const Root = wspath.Root

// All paths given to a Session are normalised by wspath.Clean ("" is the
// workspace root); the agent confines every access to /workspace in the kernel.

// ExecRequest is a command to run in a session's container.
type ExecRequest struct {
	// Argv is the command; Argv[0] is looked up in PATH.
	Argv []string
	// Dir is the working directory, already normalised by wspath.Clean ("" for the root).
	Dir string
	// Env is merged over the container's environment.
	Env map[string]string
	// Stdin is piped to the command.
	Stdin string
	// Timeout bounds the run; the whole process tree is killed when it passes.
	Timeout time.Duration
	// Grace is how long the tree has between SIGTERM and SIGKILL when the
	// timeout passes or the call is cancelled.
	Grace time.Duration
	// Capture keeps the output; otherwise it is only counted.
	Capture bool
	// OutputLimit is the number of bytes kept of each stream.
	OutputLimit int
	// Progress, if not nil, receives a report every few seconds while the
	// command runs; it may be slow, reports are dropped rather than queued.
	Progress func(Progress)
}

// BytesRead is a part of a file read as bytes.
type BytesRead = wire.ReadBytesResult

// ExecResult is what a command did. Its Dir is absolute, inside the container.
type ExecResult = wire.ExecResult

// ContainerInfo describes a session's container.
type ContainerInfo struct {
	// Name is the container's name in Podman.
	Name string
	// Image is the image it runs.
	Image string
	// Attach is the command a person runs to open a shell in the container.
	Attach string
	// User is the "uid:gid" it runs as, known once it has been created.
	User string
	// Mounts are the host folders in its workspace, known once it has been created.
	Mounts []MountInfo
	// Unenforced names the limits its host cannot enforce and it runs
	// without (Config.AllowUnenforcedLimits), e.g. "memory, CPU".
	Unenforced string
	// Kept names the kept workspace the session owns, "" for one that
	// ends with it.
	Kept string
	// Profile names the session's profile, "" for none.
	Profile string
	// Workdir is where commands run when a call names no directory: a
	// path under Root, "" for Root itself.
	Workdir string
	// CommandTimeout is the timeout of a command that gives none; 0
	// leaves it to the tool.
	CommandTimeout time.Duration
}

// Package checkpoint keeps a session's checkpoints and restores them: it
// saves /workspace into the session's store (through package capture),
// lists, deletes and diffs what the store holds, and makes the workspace
// match a checkpoint again under a journal, which a restore cut short
// leaves for the next call (or the workspace's next owner) to finish.
//
// A Room reaches its session only through its Deps, never by importing
// workspace. Its one lock, Room.mu, guards the store and the files' last
// known state; it is a leaf. The gate the Deps lend orders the session's
// calls around a checkpoint or a restore, and is taken before it.
package checkpoint

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
)

// Deps is what a Room needs of its session.
type Deps struct {
	// StoreDir is the directory that holds the workspace's checkpoints,
	// read when the store is first opened.
	StoreDir func() string
	// CapBytes bounds the store (--checkpoint-limit).
	CapBytes int64
	// StopGrace is how long a stopped job has between SIGTERM and SIGKILL.
	StopGrace time.Duration
	// MaxGrace is the longest grace a command's tree may have been given.
	MaxGrace time.Duration
	// Log receives the room's events and warnings.
	Log *slog.Logger
	// Hash is what logs call the session.
	Hash func() string
	// Ensure returns the channel to the agent, starting the container first
	// if needed.
	Ensure func(ctx context.Context) (*wire.Client, error)
	// Client is the channel to the agent if it is open now, or nil; it
	// takes the session's lock.
	Client func() *wire.Client
	// LockFiles takes the gate's files whole; TryLockFiles tries to,
	// without waiting; LockAll takes the files and the processes, stopping
	// the running commands, and says how many it stopped.
	LockFiles    func(ctx context.Context) (unlock func(), err error)
	TryLockFiles func() (unlock func(), ok bool)
	LockAll      func(ctx context.Context) (unlock func(), stopped int, err error)
	// CommandsRunning says a command runs in the container now.
	CommandsRunning func() bool
	// JobsStarted says a job was started in the current container.
	JobsStarted func() bool
	// WroteFiles says the session wrote through a tool or ran a command,
	// so the files may hold more than the workspace started with.
	WroteFiles func() bool
	// SkipPaths are the workspace paths a checkpoint leaves out (the
	// read-only mounts); it takes no lock.
	SkipPaths func() []string
	// Changed tells the watchers that a restore changed the files.
	Changed func(ctx context.Context)
	// Enter marks a tool's call as in progress and returns the function
	// that ends it: the session's idle reaper never removes a container
	// while one is.
	Enter func() (leave func())
	// Budget, when set, returns what the store in a directory is charged
	// to beside CapBytes (its client's --quota-checkpoint-bytes), or nil.
	Budget func(dir string) checkpoints.Budget
}

// Room is a session's checkpoints and restores, safe for concurrent use:
// the part of its workspace the checkpoint tools take
// (tools.Checkpointer), each of whose calls counts as the session's
// (Deps.Enter).
type Room struct {
	deps Deps
	// mu guards the store and index (the files' last known state), opened
	// from Deps.StoreDir on first use.
	mu    sync.Mutex
	store *checkpoints.Store
	index checkpoints.Index
	// budget is what the store was charged to when opened, or nil.
	budget checkpoints.Budget
	// pending says a restore's journal waits to be finished.
	pending atomic.Bool
}

// New returns the checkpoints room of a session; its store is opened on
// first use.
func New(deps Deps) *Room { return &Room{deps: deps} }

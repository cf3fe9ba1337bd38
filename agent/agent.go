//go:build linux

// Package agent is the side of wink-mcp that runs inside a workspace
// container: the container's init process serves requests from the server
// over one channel (see package wire), runs commands under per-command
// supervisors, watches the workspace for the changes they make, and keeps
// the container free of zombies and stray processes.
//
// The same binary serves as the server, the agent, the relay that carries the
// channel into the container, and the supervisor of each command; cmd/wink-mcp
// picks the role from its first argument.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Config configures an Agent.
type Config struct {
	// Workspace is the absolute path of the directory every operation is confined to.
	Workspace string
	// Self is the path of this binary, re-executed as "Self supervise" for the
	// supervisors that run commands. Empty means os.Executable().
	Self string
	// Logger receives the agent's own diagnostics; nil discards them.
	Logger *slog.Logger
}

// Agent serves workspace requests. It is safe for concurrent use: each
// request runs on its own goroutine. It runs commands and answers for the
// workspace's changes itself, and hands the file tools' requests to files
// and the jobs' to jobs; each part keeps its own state and lock.
type Agent struct {
	workspace string
	root      *os.Root
	log       *slog.Logger

	// disks looks at the filesystems commands fill.
	disks *disks

	// supervisors run the commands.
	supervisors *supervisors

	// mutations serialises the changes to the workspace's files.
	mutations *mutations
	// files serves the file tools.
	files *fileOps

	// jobs serves the job operations.
	jobs *jobs

	// forwards are the loopback ports of services beside the workspace.
	forwards forwards

	// watch follows the changes commands make (see OpWatch).
	watch *watcher

	// guard bounds the commands' share of the host's inotify limits,
	// once OpWatch starts it; Close stops it.
	guard *inotifyGuard

	// commands counts the exec and python requests running, whose
	// process trees a restore waits for (see OpWaitCommands).
	commands atomic.Int64
}

// New opens the workspace and returns an Agent. Close releases it.
func New(cfg Config) (*Agent, error) {
	root, err := os.OpenRoot(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("opening workspace: %w", err)
	}
	self := cfg.Self
	if self == "" {
		if self, err = os.Executable(); err != nil {
			root.Close()
			return nil, fmt.Errorf("finding own executable: %w", err)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tmp := os.TempDir()
	mutations, watch := &mutations{}, newWatcher(root)
	a := &Agent{workspace: cfg.Workspace, root: root, log: log, supervisors: newSupervisors(self, log), watch: watch,
		disks:     &disks{workspace: cfg.Workspace, tmp: tmp, tmpOnWorkspace: sameFilesystem(cfg.Workspace, tmp)},
		mutations: mutations, files: &fileOps{root: root, mutations: mutations, watch: watch}}
	a.jobs = newJobs(jobDeps{workspace: cfg.Workspace, resolveDir: a.resolveDir, supervisors: a.supervisors, watch: watch, disks: a.disks, log: log})
	a.disks.keptOutputs = a.jobs.keptOutputs
	a.guard = newInotifyGuard(a.supervisors, a.jobs, log)
	return a, nil
}

// Close lets the waiting supervisors exit and releases the workspace handle.
func (a *Agent) Close() error {
	a.supervisors.closeIdle()
	a.guard.stop()
	a.watch.close()
	return a.root.Close()
}

// ServeConn answers the requests read from conn until it ends or ctx is done.
// When it returns, every command started for this connection has been killed.
func (a *Agent) ServeConn(ctx context.Context, conn io.ReadWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := wire.NewReader(conn)
	w := wire.NewWriter(conn)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inflight = map[uint64]context.CancelFunc{}
	)
	defer wg.Wait()
	defer cancel()
	for {
		var req wire.Request
		if err := r.Next(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading request: %w", err)
		}
		if req.Op == wire.OpCancel {
			var args wire.CancelArgs
			if json.Unmarshal(req.Args, &args) == nil {
				mu.Lock()
				if stop, ok := inflight[args.Target]; ok {
					stop()
				}
				mu.Unlock()
			}
			continue
		}
		mu.Lock()
		if _, dup := inflight[req.ID]; dup {
			mu.Unlock()
			_ = w.Write(wire.Response{ID: req.ID, Error: wire.Errorf(wire.CodeBadRequest, "request id %d is already in flight", req.ID)})
			continue
		}
		reqCtx, stop := context.WithCancel(ctx)
		inflight[req.ID] = stop
		mu.Unlock()
		_ = w.Write(wire.Response{ID: req.ID, Ack: true})
		wg.Go(func() {
			report := func(p wire.Progress) { _ = w.Write(wire.Response{ID: req.ID, Progress: &p}) }
			resp := a.handle(reqCtx, req, report)
			mu.Lock()
			delete(inflight, req.ID)
			mu.Unlock()
			stop()
			if err := w.Write(resp); err != nil {
				// A result that cannot be sent must still be answered.
				a.log.Warn("writing response", "id", req.ID, "err", err)
				_ = w.Write(wire.Response{ID: req.ID, Error: wire.Errorf(wire.CodeInternal, "the result could not be sent: %v", err)})
			}
		})
	}
}

// handle runs one request and builds its response; report sends a progress
// frame for it.
func (a *Agent) handle(ctx context.Context, req wire.Request, report func(wire.Progress)) wire.Response {
	var (
		result any
		werr   *wire.Error
	)
	switch req.Op {
	case wire.OpPing:
		result = wire.PingResult{PID: os.Getpid()}
	case wire.OpExec:
		a.commands.Add(1)
		defer a.commands.Add(-1)
		result, werr = dispatch(req.Args, func(args wire.ExecArgs) (*wire.ExecResult, *wire.Error) {
			res, werr := a.exec(ctx, args, report)
			if res != nil {
				res.Changes = a.commandChanges()
			}
			return res, werr
		})
	case wire.OpPython:
		a.commands.Add(1)
		defer a.commands.Add(-1)
		result, werr = dispatch(req.Args, func(args wire.PythonArgs) (*wire.PythonResult, *wire.Error) {
			res, werr := a.python(ctx, args, report)
			if res != nil {
				res.Changes = a.commandChanges()
			}
			return res, werr
		})
	case wire.OpWaitCommands:
		result, werr = dispatch(req.Args, func(args wire.WaitCommandsArgs) (*wire.WaitCommandsResult, *wire.Error) {
			return a.waitCommands(ctx, time.Duration(args.TimeoutMillis)*time.Millisecond), nil
		})
	case wire.OpList:
		result, werr = dispatch(req.Args, func(args wire.PathArgs) (*wire.ListResult, *wire.Error) { return a.files.list(args.Path) })
	case wire.OpRead:
		result, werr = dispatch(req.Args, a.files.read)
	case wire.OpReadBytes:
		result, werr = dispatch(req.Args, a.files.readBytes)
	case wire.OpWrite:
		result, werr = dispatch(req.Args, a.files.write)
	case wire.OpEdit:
		result, werr = dispatch(req.Args, a.files.edit)
	case wire.OpGlob:
		result, werr = dispatch(req.Args, a.files.glob)
	case wire.OpGrep:
		result, werr = dispatch(req.Args, a.files.grep)
	case wire.OpRemove:
		result, werr = dispatch(req.Args, func(args wire.PathArgs) (*wire.RemoveResult, *wire.Error) { return a.files.remove(args.Path) })
	case wire.OpJobStart:
		result, werr = dispatch(req.Args, a.jobs.startJob)
	case wire.OpJobStatus:
		result, werr = dispatch(req.Args, a.jobs.jobStatus)
	case wire.OpJobOutput:
		result, werr = dispatch(req.Args, a.jobs.jobOutput)
	case wire.OpJobSignal:
		result, werr = dispatch(req.Args, a.jobs.signalJob)
	case wire.OpJobInput:
		result, werr = dispatch(req.Args, a.jobs.jobInput)
	case wire.OpJobList:
		result, werr = dispatch(req.Args, a.jobs.listJobs)
	case wire.OpScan:
		result, werr = dispatch(req.Args, a.scan)
	case wire.OpReadFiles:
		result, werr = dispatch(req.Args, a.readFiles)
	case wire.OpApply:
		result, werr = dispatch(req.Args, a.apply)
	case wire.OpWatch:
		result, werr = dispatch(req.Args, func(args wire.WatchArgs) (*wire.WatchStatus, *wire.Error) {
			st := a.watch.start(args.MaxDirs)
			a.guard.start(args.InotifyShares)
			return &st, nil
		})
	case wire.OpChanges:
		result, werr = dispatch(req.Args, func(args wire.ChangesArgs) (*wire.ChangesResult, *wire.Error) { return a.changes(ctx, args) })
	case wire.OpJobStopAll:
		result, werr = dispatch(req.Args, a.jobs.stopAllJobs)
	case wire.OpJobForget:
		result, werr = dispatch(req.Args, a.jobs.forgetJob)
	case wire.OpDiskSpace:
		result, werr = a.disks.space()
	case wire.OpServiceForward:
		result, werr = dispatch(req.Args, a.forwards.forward)
	case wire.OpServiceUnforward:
		result, werr = dispatch(req.Args, a.forwards.unforward)
	default:
		werr = wire.Errorf(wire.CodeBadRequest, "unknown operation %q", req.Op)
	}
	if werr != nil {
		return wire.Response{ID: req.ID, Error: werr}
	}
	return wire.Response{ID: req.ID, Result: result}
}

// dispatch decodes an operation's arguments and runs it.
func dispatch[A any, R any](raw json.RawMessage, op func(A) (*R, *wire.Error)) (any, *wire.Error) {
	var args A
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "decoding arguments: %v", err)
	}
	r, werr := op(args)
	if werr != nil {
		return nil, werr
	}
	return r, nil
}

// waitCommands answers OpWaitCommands: it waits until no command runs, for
// at most timeout, and says how many still do.
func (a *Agent) waitCommands(ctx context.Context, timeout time.Duration) *wire.WaitCommandsResult {
	deadline := time.Now().Add(timeout)
	for a.commands.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	return &wire.WaitCommandsResult{Running: a.commands.Load()}
}

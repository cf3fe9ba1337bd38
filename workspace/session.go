package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/checkpoint"
	"github.com/wink-mcp/wink-mcp/workspace/files"
	"github.com/wink-mcp/wink-mcp/workspace/folders"
	"github.com/wink-mcp/wink-mcp/workspace/jobs"
	"github.com/wink-mcp/wink-mcp/workspace/ports"
	"github.com/wink-mcp/wink-mcp/workspace/services"
	"github.com/wink-mcp/wink-mcp/workspace/touched"
	"github.com/wink-mcp/wink-mcp/workspace/watch"
)

// Session is one MCP session's workspace, safe for concurrent use; every
// method honours ctx's cancellation. The tools take of it, or of one of
// its parts (Parts), only the small interfaces they define (package
// tools). The container is made by
// Prestart, or by the first call that needs it.
type Session struct {
	m *Manager
	// who is the MCP session the workspace serves.
	who servedSession
	// key names the container and the session directory: the hash, or
	// the random key of a pooled container the session was handed.
	key  string
	name string
	dir  string
	// diskFile holds dir's filesystem when disks are limited.
	diskFile string
	// principal is the digest of the client's bearer token ("" for local
	// clients); kept and handed-over workspaces go only to the same one.
	principal string
	// kept, when set, is the kept workspace the session owns: its files
	// and checkpoints outlive the session.
	kept *keptWorkspace
	// roaming, when set, is the engine's hold of the session's workspace,
	// not kept, that any server may serve in turn (roaming.go).
	roaming *roamingWorkspace
	// containerQuota holds its container's memory and CPU limits against
	// its principal's quota while the container exists; under mu, or
	// before any call can find the session (a pooled one taken).
	containerQuota *quota.Hold
	// stdio says the client is a local process over stdio (SessionOptions.Stdio).
	// It and principal are set before any call can find the session, and
	// never change: an attach keeps them (see handoffs.Attach).
	stdio bool
	// handoffs hands the workspace over and takes one over (a part of its
	// own, see Parts), and holds the workspaces the session handed to
	// another process while they wait.
	handoffs *handoffs
	// forks copies the workspace into forks (a part of its own).
	forks *forks
	// digests is its workspace digest (workspace_digest).
	digests *digests
	// profileSwitch changes the session's profile (a part of its own, see
	// Parts); the profile itself stays here, with the life cycle that
	// makes containers from it.
	profileSwitch *profileSwitch

	// mu serialises the container's lifecycle: concurrent first calls wait
	// for one creation instead of racing to make two containers.
	mu     sync.Mutex
	client *wire.Client
	stream io.Closer
	// proxy answers the container's egress (nil without Config.Egress),
	// through tunnel, which lives as long as the channel.
	proxy  *egress.Session
	tunnel *yamux.Session
	// tunnelPorts takes the port previews' connections the agent hands
	// over beside tunnel (nil when the tunnel rides no socket).
	tunnelPorts ports.Handover
	// meter counts the session's egress against --egress-max-bytes; every
	// proxy the session makes counts into it (see handoffs.useMeter).
	meter *egress.Meter
	// egressPolicy lists the session's egress and takes from it what the
	// model drops (a part of its own, see Parts).
	egressPolicy *egressPolicy
	// ports are the container ports shown on this machine (a room of its
	// own, package ports).
	ports *ports.Room

	created bool // a container exists (or existed until it died) for this session
	ended   bool
	disk    bool // the session directory is its own filesystem, mounted

	// mounts are the host folders the workspace shows (sessionMounts).
	mounts sessionMounts
	user   string // the "uid:gid" of the last container made
	image  string // the image of the last container made
	// seen is the image of the last container made ("" until one is, or
	// after a change of profile) and the profile, for KnownSessionImage,
	// which must not wait for the lock a container being made holds.
	seen atomic.Pointer[PlannedImage]
	// profile is the session's profile (nil: the server's settings alone),
	// which its next container is made from.
	profile *profiles.Profile
	// setupBase, set only for a container that runs a profile's setup, is
	// the image it starts from.
	setupBase string
	// prepared is the image buildImage found for a profile, which the
	// container createLocked makes next starts from.
	prepared preparedImage
	// used says a call has run on the container, which a change of
	// profile then replaces only when asked to.
	used       atomic.Bool
	unenforced string // the limits the last container made goes without
	// opened is when the session got this workspace; startedAt when its
	// container last started (guarded by mu).
	opened    time.Time
	startedAt time.Time

	// life ends when the session does: work begun ahead of a call (see
	// Prestart) stops with it.
	life    context.Context
	endLife context.CancelFunc

	active   atomic.Int32 // calls in progress
	lastUsed atomic.Int64 // unix nanoseconds of the last call's start or end
	// jobs are the background jobs started in the container (package
	// jobs).
	jobs *jobs.Part

	touched touched.Snapshot // files the tools and commands wrote, edited or removed
	// files is the workspace's files as the file tools see them (package
	// files).
	files *files.Part
	// watcher follows the changes the container's processes make
	// (package watch).
	watcher *watch.Watcher
	// creation is where the making of its container stands, for the
	// calls that wait for it.
	creation creationState

	// gate orders the calls around checkpoints and restores.
	gate *gate
	// storeDir holds the workspace's checkpoints, which the checkpoints
	// room (package checkpoint) opens on first use.
	storeDir    string
	checkpoints *checkpoint.Room
	// folders shows what the session changed in its mounted host folders
	// (package folders).
	folders *folders.Part
	// services are the containers beside this one (package services);
	// serviceOf, in a service's own session, is its workspace's key.
	services  *services.Room
	serviceOf string
	// serviceUser, in a service's own session, is the uid:gid of the
	// image's user its container runs as ("": the workspace's).
	serviceUser string

	// ranCommands says a command ran, so the files may hold more than the
	// tools wrote.
	ranCommands atomic.Bool
}

// servedSession is who a workspace serves: the MCP session, which a pooled
// container's or a parked workspace's changes when another session takes
// it, as calls may run. Its value is never changed in place, only
// replaced whole (serve).
type servedSession struct {
	p atomic.Pointer[sessionIdentity]
}

// sessionIdentity is one value of a servedSession.
type sessionIdentity struct {
	id   string // the MCP session id; never logged
	hash string // what logs call the session
}

// serve makes the workspace the MCP session id's, which logs call hash.
func (w *servedSession) serve(id, hash string) { w.p.Store(&sessionIdentity{id: id, hash: hash}) }

// id is the MCP session id the workspace serves ("" for a pooled
// container no session took yet); it is never logged.
func (w *servedSession) id() string { return w.p.Load().id }

// hash is what logs call the session the workspace serves.
func (w *servedSession) hash() string { return w.p.Load().hash }

// workspaceDir is the host directory mounted at /workspace.
func (s *Session) workspaceDir() string { return filepath.Join(s.dir, "workspace") }

// Exec runs a command in the session's container, creating the container
// first if needed. A command that runs, whatever its exit status, is a
// result; one that cannot start is an error.
func (s *Session) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	args := wire.ExecArgs{
		Argv:          req.Argv,
		Dir:           s.commandDir(req.Dir),
		Env:           req.Env,
		Stdin:         req.Stdin,
		TimeoutMillis: req.Timeout.Milliseconds(),
		GraceMillis:   req.Grace.Milliseconds(),
		Capture:       req.Capture,
		OutputLimit:   req.OutputLimit,
		Progress:      req.Progress != nil,
	}
	var res ExecResult
	err := s.call(ctx, wire.OpExec, args, &res, req.Progress)
	s.watcher.Commanded(ctx, res.Changes)
	return res, err
}

// Start makes sure the container exists, runs and answers.
func (s *Session) Start(ctx context.Context) (ContainerInfo, error) {
	defer s.enter()()
	_, err := s.ensure(ctx)
	return s.Info(), err
}

// Prestart creates and starts the session's container in the background,
// so that the first call finds it ready instead of waiting for it. ctx
// carries the MCP client session (a container that mounts the client's
// roots asks for them); its cancellation is ignored, and the work stops
// when the session ends. A failure is logged and left to the first call,
// which tries again and reports it.
func (s *Session) Prestart(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.life, cancel)
	go func() {
		defer cancel()
		defer stop()
		start := time.Now()
		if _, err := s.Start(ctx); err != nil {
			if s.life.Err() == nil {
				s.m.log.Warn("preparing the workspace ahead of its first call failed; the first call tries again",
					"session", s.who.hash(), "err", err)
			}
			return
		}
		s.m.log.Debug("workspace prepared ahead of its first call", "session", s.who.hash(), "duration_ms", time.Since(start).Milliseconds())
	}()
}

// Reset removes the container and deletes the session's files; the next
// call starts a fresh container on an empty workspace.
func (s *Session) Reset(ctx context.Context) (ContainerInfo, error) {
	defer s.enter()()
	s.mounts.pullMu.Lock() // no read of the changes may see the files go
	defer s.mounts.pullMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return s.infoLocked(), ErrSessionEnded
	}
	start := time.Now()
	had := s.created
	if err := s.removeLocked(ctx); err != nil {
		return s.infoLocked(), err
	}
	if err := s.checkpoints.ForgetHibernation(); err != nil {
		return s.infoLocked(), fmt.Errorf("dropping the files saved for the next container: %w", err)
	}
	if s.m.cfg.FilesOnEngineHost {
		if err := s.m.eng.RemoveWorkspace(ctx, s.name); err != nil {
			return s.infoLocked(), fmt.Errorf("deleting the workspace files: %w", err)
		}
		for i := range s.mounts.list {
			s.mounts.list[i].Uploaded = false // the next container gets a fresh copy
		}
	}
	for _, dir := range []string{s.workspaceDir(), filepath.Join(s.dir, mountsDir)} {
		if err := removeAll(dir); err != nil {
			return s.infoLocked(), fmt.Errorf("deleting the workspace files: %w", err)
		}
	}
	s.touched.Reset()
	if had {
		logEvent(s.m.log, EventRemoved, s, start, "reason", "reset")
	}
	return s.infoLocked(), nil
}

// Info describes the session's container, whether or not it runs yet.
func (s *Session) Info() ContainerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked()
}

func (s *Session) infoLocked() ContainerInfo {
	info := ContainerInfo{Name: s.name, Image: s.image, User: s.user, Unenforced: s.unenforced, Attach: s.m.eng.AttachCommand(s.name),
		Profile: profileName(s.profile), CommandTimeout: commandTimeout(s.profile)}
	if s.profile != nil {
		info.Workdir = s.profile.Workdir
	}
	if s.kept != nil {
		info.Kept = s.kept.name
	}
	for _, mt := range s.mounts.list {
		info.Mounts = append(info.Mounts, mt.Info(s.dir))
	}
	return info
}

// call sends one request to the agent, starting the container first if
// needed; progress, if not nil, receives the request's progress reports.
func (s *Session) call(ctx context.Context, op string, args, result any, progress func(Progress)) error {
	defer s.enter()()
	// A call that neither sees nor changes the files (a job's status, its
	// output, forgetting it) goes on beside a restore that cannot finish:
	// it may be what frees the disk the restore needs.
	if !jobs.Query(op) {
		if err := s.checkpoints.SettlePendingRestore(ctx); err != nil {
			return err
		}
	}
	ctx, leave, err := s.gate.enter(ctx, op)
	if err != nil {
		return err
	}
	defer leave()
	if gateOf(op)&takesProcs != 0 {
		s.ranCommands.Store(true)
	}
	err = s.callAgent(ctx, op, args, result, progress)
	if err != nil && errors.Is(context.Cause(ctx), ErrStoppedForRestore) {
		return ErrStoppedForRestore
	}
	return s.checkpoints.WithDiskAdvice(ctx, err)
}

// callAgent sends one request to the agent, starting the container first
// if needed.
func (s *Session) callAgent(ctx context.Context, op string, args, result any, progress func(Progress)) error {
	s.used.Store(true)
	var deliver func(Progress)
	if progress != nil {
		var stop func()
		deliver, stop = latestOnly(progress)
		defer stop()
	}
	// A request the agent never took (the channel died first) is sent once
	// more, on a new channel, to the container as it is then.
	for attempt := 1; ; attempt++ {
		var client *wire.Client
		err := inSpan(ctx, "workspace.ensure", func(ctx context.Context) (err error) {
			client, err = s.ensure(ctx)
			return err
		})
		if err != nil {
			return err
		}
		if err := attachServices(ctx, s); err != nil {
			return err
		}
		err = tracedAgentCall(ctx, op, attempt, func(ctx context.Context) error {
			return client.CallWithProgress(ctx, op, args, result, deliver)
		})
		if errors.Is(err, wire.ErrNotDelivered) && attempt < 2 {
			s.m.log.Info("request sent again on a new channel", "session", s.who.hash(), "op", op, "err", err)
			continue
		}
		if errors.Is(err, wire.ErrClosed) {
			var why string
			if errors.Is(err, wire.ErrSilent) {
				why = ": the container or the Podman service is frozen or overloaded"
			}
			return fmt.Errorf("%w (%v%s)", ErrWorkspaceLost, err, why)
		}
		return err
	}
}

// enter marks a call as in progress and returns the function that ends it;
// the idle reaper never removes a container while a call is in progress.
func (s *Session) enter() func() {
	s.active.Add(1)
	s.lastUsed.Store(time.Now().UnixNano())
	return func() {
		s.lastUsed.Store(time.Now().UnixNano())
		s.active.Add(-1)
	}
}

// ensure returns a working channel to the session's agent: the open one, a
// new one to the running container, or one to a new container when there is
// none or the old one died.
func (s *Session) ensure(ctx context.Context) (*wire.Client, error) {
	if err := s.buildImage(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, ErrSessionEnded
	}
	// A pooled container a session took, or a handed-over workspace
	// another attached, is recorded as theirs before their first call.
	if err := s.mounts.recordLocked(); err != nil {
		return nil, err
	}
	if s.client != nil {
		select {
		case <-s.client.Done():
			s.dropChannelLocked()
		default:
			return s.client, nil
		}
	}
	if s.serviceOf != "" && !s.startedAt.IsZero() {
		// A service's container is made once (its channel is down
		// here): one made again would not run the service's command.
		if _, running, err := s.m.eng.Running(ctx, s.name); err != nil || !running || !s.created {
			return nil, cmp.Or(err, services.ErrGone)
		}
	}
	if !s.created {
		return s.createLocked(ctx)
	}
	return s.recoverLocked(ctx)
}

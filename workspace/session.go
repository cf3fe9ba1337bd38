package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/ports"
)

// readyTimeout bounds the wait for a new channel's agent to answer. An agent
// that cannot run ends the channel at once, so only a hung one waits this
// long; a healthy one starved of CPU by a burst of container starts (50 at
// once on 2 cores) has taken over 15 s, and a burst must not fail.
const readyTimeout = 60 * time.Second

// A channel is pinged after heartbeatInterval without a frame, and given up
// after heartbeatTimeout: a frozen Podman service freezes the stream it
// relays, and calls on it must fail rather than hang.
const (
	heartbeatInterval = 5 * time.Second
	heartbeatTimeout  = 20 * time.Second
)

// Session is one MCP session's workspace. It implements Workspace. The
// container is made by Prestart, or by the first call that needs it.
type Session struct {
	m *Manager
	// who is the MCP session the workspace serves (see id and hash); a
	// pooled container's, or a parked workspace's, changes when another
	// session takes it, as calls may run.
	who atomic.Pointer[sessionIdentity]
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
	// stdio says the client is a local process over stdio (SessionOptions.Stdio).
	// It and principal are set before any call can find the session, and
	// never change: an attach keeps them (see Manager.attach).
	stdio bool
	// handedOver are the roots of the kept workspaces this session handed
	// to another process; while they wait (for an attach, or for their
	// export), they share its disk limit.
	handedOver []string

	// mu serialises the container's lifecycle: concurrent first calls wait
	// for one creation instead of racing to make two containers.
	mu sync.Mutex
	// pullMu serialises bringing a session's copies back from the Podman
	// host and reading them (Config.FilesOnPodmanHost) with each other and
	// with what deletes the files (Reset, end); it is taken before mu.
	pullMu sync.Mutex
	client *wire.Client
	stream io.Closer
	// proxy answers the container's egress (nil without Config.Egress),
	// through tunnel, which lives as long as the channel.
	proxy  *egress.Session
	tunnel *yamux.Session
	// meter counts the session's egress against --egress-max-bytes; every
	// proxy the session makes counts into it (see useMeter).
	meter *egress.Meter
	// ports are the container ports shown on this machine (a room of its
	// own, package ports).
	ports *ports.Room

	created bool // a container exists (or existed until it died) for this session
	ended   bool
	disk    bool // the session directory is its own filesystem, mounted

	mounts         []sessionMount // fixed when the first container is made
	mountsResolved bool
	rootsOwner     string // "uid:gid" owning the client's writable roots, if it chose the user
	user           string // the "uid:gid" of the last container made
	image          string // the image of the last container made
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
	// jobsStarted says a job was started in the current container, so its
	// end and its idle clean-up ask the agent about running jobs.
	jobsStarted atomic.Bool

	touched snapshot // files the tools and commands wrote, edited or removed
	// watchStatus is the latest status of the agent's watch.
	watchStatus atomic.Pointer[wire.WatchStatus]

	// gate orders the calls around checkpoints and restores.
	gate *gate
	// storeDir holds the workspace's checkpoints; store and index (the
	// files' last known state) are opened from it on first use, under storeMu.
	storeDir string
	storeMu  sync.Mutex
	store    *checkpoints.Store
	index    checkpoints.Index
	// restorePending says a restore's journal waits to be finished.
	restorePending atomic.Bool
	// ranCommands says a command ran, so the files may hold more than the
	// tools wrote.
	ranCommands atomic.Bool
	// readOnlyPaths are the workspace paths of the read-only mounts, set
	// when the mounts are fixed.
	readOnlyPaths atomic.Pointer[[]string]
	// recordedAs is the session hash the mounts' manifest and export
	// marker were written under (guarded by mu), "" before: see
	// recordMountsLocked.
	recordedAs string
}

var _ Workspace = (*Session)(nil)

// sessionIdentity is who a workspace serves; never changed in place, only
// replaced whole (Session.serve).
type sessionIdentity struct {
	id   string // the MCP session id; never logged
	hash string // what logs call the session
}

// serve makes the workspace the MCP session id's, which logs call hash.
func (s *Session) serve(id, hash string) { s.who.Store(&sessionIdentity{id: id, hash: hash}) }

// id is the MCP session id the workspace serves ("" for a pooled
// container no session took yet); it is never logged.
func (s *Session) id() string { return s.who.Load().id }

// hash is what logs call the session the workspace serves.
func (s *Session) hash() string { return s.who.Load().hash }

// mountDiskLocked gives the session directory a filesystem of its own,
// the size of the disk limit, before anything is written to it.
func (s *Session) mountDiskLocked(ctx context.Context) error {
	size := s.limits().DiskBytes
	if s.disk || s.m.disk == nil || size == 0 || s.setupBase != "" {
		return nil
	}
	size, err := s.diskBudget(size)
	if err != nil {
		return err
	}
	mount := s.m.disk.mountDisk
	if s.kept != nil {
		mount = s.m.disk.mountKeptDisk
	}
	if err := mount(ctx, s.diskFile, s.dir, size); err != nil {
		return err
	}
	s.disk = true
	return nil
}

// unmountDiskLocked unmounts the session's filesystem, keeping its image
// (FindSessions mounts kept images again to read them).
func (s *Session) unmountDiskLocked() bool {
	if !s.disk {
		return true
	}
	if err := unmountDisk(s.dir); err != nil {
		s.m.log.Warn("unmounting session disk", "session", s.hash(), "err", err)
		return false
	}
	s.disk = false
	return true
}

// deleteFilesLocked deletes the session directory and its filesystem.
func (s *Session) deleteFilesLocked() {
	if !s.unmountDiskLocked() {
		return
	}
	if err := os.Remove(s.diskFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.m.log.Warn("deleting session disk image", "session", s.hash(), "err", err)
	}
	if err := removeAll(s.dir); err != nil {
		s.m.log.Warn("deleting session directory", "session", s.hash(), "dir", s.dir, "err", err)
	}
}

// workspaceDir is the host directory mounted at /workspace.
func (s *Session) workspaceDir() string { return filepath.Join(s.dir, "workspace") }

// Exec implements Workspace.
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
	s.commanded(ctx, res.Changes)
	return res, err
}

// Start implements Workspace.
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
					"session", s.hash(), "err", err)
			}
			return
		}
		s.m.log.Debug("workspace prepared ahead of its first call", "session", s.hash(), "duration_ms", time.Since(start).Milliseconds())
	}()
}

// Reset implements Workspace.
func (s *Session) Reset(ctx context.Context) (ContainerInfo, error) {
	defer s.enter()()
	s.pullMu.Lock() // no read of the changes may see the files go
	defer s.pullMu.Unlock()
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
	if s.m.cfg.FilesOnPodmanHost {
		if err := s.m.eng.RemoveWorkspace(ctx, s.name); err != nil {
			return s.infoLocked(), fmt.Errorf("deleting the workspace files: %w", err)
		}
		for i := range s.mounts {
			s.mounts[i].uploaded = false // the next container gets a fresh copy
		}
	}
	for _, dir := range []string{s.workspaceDir(), filepath.Join(s.dir, mountsDir)} {
		if err := removeAll(dir); err != nil {
			return s.infoLocked(), fmt.Errorf("deleting the workspace files: %w", err)
		}
	}
	s.touched.reset()
	if had {
		logEvent(s.m.log, EventRemoved, s, start, "reason", "reset")
	}
	return s.infoLocked(), nil
}

// Info implements Workspace.
func (s *Session) Info() ContainerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked()
}

func (s *Session) infoLocked() ContainerInfo {
	info := ContainerInfo{Name: s.name, Image: s.image, User: s.user, Unenforced: s.unenforced, Attach: s.m.eng.AttachCommand(s.name),
		Profile: profileName(s.profile), CommandTimeout: s.commandTimeout()}
	if s.profile != nil {
		info.Workdir = s.profile.Workdir
	}
	if s.kept != nil {
		info.Kept = s.kept.name
	}
	for _, mt := range s.mounts {
		info.Mounts = append(info.Mounts, mt.info(s.dir))
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
	if !jobQuery(op) {
		if err := s.settlePendingRestore(ctx); err != nil {
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
	return s.withDiskAdvice(ctx, err)
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
		client, err := s.ensure(ctx)
		if err != nil {
			return err
		}
		err = client.CallWithProgress(ctx, op, args, result, deliver)
		if errors.Is(err, wire.ErrNotDelivered) && attempt < 2 {
			s.m.log.Info("request sent again on a new channel", "session", s.hash(), "op", op, "err", err)
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
	if err := s.recordMountsLocked(); err != nil {
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
	if !s.created {
		return s.createLocked(ctx)
	}
	return s.recoverLocked(ctx)
}

// buildImage finds the image of the session's profile, building it when
// its setup has not run, when a container is to be made, without holding
// the session's lock: a setup may take minutes, and Info (the prompt, the
// tools) must not wait for it. createLocked takes the image it leaves in
// prepared, rather than looking it up again.
func (s *Session) buildImage(ctx context.Context) error {
	s.mu.Lock()
	p, has := s.profile, s.client != nil || s.setupBase != ""
	s.mu.Unlock()
	if has || p == nil || len(p.Setup) == 0 {
		return nil
	}
	image, _, err := s.m.profileImage(ctx, p, nil)
	if err == nil {
		s.mu.Lock()
		s.prepared = preparedImage{profile: p, image: image}
		s.mu.Unlock()
	}
	return err
}

// preparedImage is a profile's image as buildImage found it.
type preparedImage struct {
	profile *profiles.Profile
	image   string
}

// recoverLocked reconnects to a running container, or replaces a dead one.
func (s *Session) recoverLocked(ctx context.Context) (*wire.Client, error) {
	start := time.Now()
	exists, running, err := s.m.eng.Running(ctx, s.name)
	if err != nil {
		return nil, err
	}
	var reason string
	switch {
	case running:
		err := s.connectLocked(ctx, newStepTimes())
		if err == nil {
			logEvent(s.m.log, EventChannelReopened, s, start)
			return s.client, nil
		}
		reason = fmt.Sprintf("channel failed: %v", err)
	case exists:
		reason = "container stopped"
	default:
		reason = "container missing"
	}
	if err := s.removeLocked(ctx); err != nil {
		return nil, err
	}
	client, err := s.createLocked(ctx)
	if err == nil {
		logEvent(s.m.log, EventRecreatedAfterFailure, s, start, "reason", reason)
	}
	return client, err
}

// createLocked creates, starts and connects to a new container.
func (s *Session) createLocked(ctx context.Context) (*wire.Client, error) {
	start := time.Now()
	steps := newStepTimes()
	m := s.m
	image := s.setupBase
	if image == "" && s.prepared.profile == s.profile {
		image = s.prepared.image
	}
	s.prepared = preparedImage{}
	if image == "" {
		var err error
		if image, _, err = m.profileImage(ctx, s.profile, nil); err != nil {
			return nil, err
		}
	}
	s.image = image
	s.seen.Store(&PlannedImage{Image: image, Profile: profileName(s.profile)})
	steps.done("image")
	if err := s.mountDiskLocked(ctx); err != nil {
		return nil, err
	}
	steps.done("disk")
	host, settled, err := m.eng.Host(ctx)
	if err != nil {
		return nil, err
	}
	steps.done("host_facts")
	if err := limitsError(host, m.cfg.AllowUnenforcedLimits); err != nil {
		return nil, err
	}
	if err := s.resolveMountsLocked(ctx, host.Markers); err != nil {
		return nil, err
	}
	user, keepID := m.identity(host.Rootless, s)
	s.user = user
	uid, gid := parseUser(user)
	if m.cfg.FilesOnPodmanHost {
		if err := prepareRemoteMounts(s.mounts); err != nil {
			return nil, err
		}
	} else {
		if err := m.prepareWorkspaceDir(s.workspaceDir(), user); err != nil {
			return nil, err
		}
		if err := prepareMounts(s.workspaceDir(), s.mounts, uid, gid); err != nil {
			return nil, err
		}
	}
	steps.done("prepare_dirs")
	spec := m.spec(s, host, user, keepID)
	s.unenforced = unenforced(host).Limits
	remove := func() error {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.APITimeout)
		defer cancel()
		return s.removeLocked(cleanup)
	}
	fail := func(err error) (*wire.Client, error) {
		if rmErr := remove(); rmErr != nil {
			m.log.Warn("removing a container that failed to start", "container", s.name, "err", rmErr)
		}
		return nil, err
	}
	if s.kept != nil {
		if err := m.removeStaleOf(ctx, s.kept.name); err != nil {
			return nil, err
		}
	}
	// From here a failure removes whatever Podman made: a create request
	// cancelled in flight may still have made the container.
	s.created = true
	err = m.eng.Create(ctx, spec)
	if errors.Is(err, engine.ErrNameInUse) {
		// Names are keyed by this instance's secret: a container with this
		// name can only be a leftover of this very session.
		if err = m.eng.Remove(ctx, s.name); err == nil {
			err = m.eng.Create(ctx, spec)
		}
	}
	if err == nil && m.cfg.FilesOnPodmanHost {
		err = s.uploadCopiesLocked(ctx, uid, gid)
	}
	if err != nil {
		return fail(err)
	}
	steps.done("create")
	logEvent(m.log, EventCreated, s, start, "image", spec.Image, "user", spec.User, "memory_bytes", spec.MemoryBytes,
		"cpus", spec.CPUs, "pids_limit", spec.PidsLimit, "tmp_bytes", spec.TmpBytes, "nofile", spec.NofileLimit,
		"nproc", spec.NprocLimit, "network", "none", "cap_drop", "ALL", "no_new_privileges", true, "keep_id", keepID, "mounts", len(spec.Mounts),
		"unenforced_limits", s.unenforced)
	if err := m.eng.Start(ctx, s.name); err != nil {
		return fail(err)
	}
	steps.done("start")
	s.startedAt = time.Now()
	logEvent(m.log, EventStarted, s, start)
	if err := s.connectLocked(ctx, steps); err != nil {
		return fail(fmt.Errorf("the workspace container %s started but its agent did not answer: %w", s.name, err))
	}
	if err := s.makeWorkdirLocked(ctx); err != nil {
		return fail(err)
	}
	if !settled {
		// Made from facts an earlier process recorded: used only once the
		// service confirms them, else made again from its answer.
		now, err := m.eng.SettledHost(ctx)
		if err != nil {
			return fail(err)
		}
		steps.done("host_facts_confirmed")
		if now != host {
			m.log.Warn("the Podman service's host changed since an earlier process recorded it; making the container again",
				"session", s.hash(), "recorded", host, "now", now)
			if err := remove(); err != nil {
				return nil, fmt.Errorf("removing a container made from outdated host facts: %w", err)
			}
			s.mounts, s.mountsResolved = nil, false
			return s.createLocked(ctx)
		}
	}
	logEvent(m.log, EventReady, s, start, "steps", steps.String())
	return s.client, nil
}

// connectLocked opens a channel to the agent and waits for it to answer,
// recording both steps in steps.
func (s *Session) connectLocked(ctx context.Context, steps *stepTimes) error {
	stream, err := s.m.eng.OpenChannel(ctx, s.name)
	if err != nil {
		return err
	}
	steps.done("channel")
	client := wire.NewClient(stream, stream)
	pingCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := client.Call(pingCtx, wire.OpPing, nil, nil); err != nil {
		stream.Close()
		return fmt.Errorf("waiting for the agent: %w", err)
	}
	steps.done("agent_ping")
	if err := s.startWatchLocked(pingCtx, client); err != nil {
		stream.Close()
		return err
	}
	steps.done("watch")
	if s.proxy != nil {
		if err := s.openTunnelLocked(ctx); err != nil {
			stream.Close()
			return err
		}
		steps.done("egress_tunnel")
	}
	client.Watch(heartbeatInterval, heartbeatTimeout, stream)
	s.client, s.stream = client, stream
	return nil
}

func (s *Session) dropChannelLocked() {
	if s.stream != nil {
		s.stream.Close()
	}
	if s.tunnel != nil {
		s.tunnel.Close()
	}
	s.client, s.stream, s.tunnel = nil, nil, nil
}

// removeLocked removes the container; the channel dies with it.
func (s *Session) removeLocked(ctx context.Context) error {
	if !s.created {
		s.dropChannelLocked()
		return nil
	}
	s.stopJobsLocked(ctx)
	err := s.m.eng.Remove(ctx, s.name)
	s.dropChannelLocked()
	if err != nil {
		return err
	}
	s.created = false
	s.jobsStarted.Store(false) // they went with the container
	return nil
}

// cleanupIfIdle removes the container when no call has run for idle. The
// files stay; the next call starts a new container on them.
func (s *Session) cleanupIfIdle(ctx context.Context, idle time.Duration) {
	last := time.Unix(0, s.lastUsed.Load())
	if s.active.Load() > 0 || time.Since(last) < idle {
		return
	}
	// A session busy creating or removing its container is not idle.
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	if !s.created || s.ended || s.active.Load() > 0 {
		return
	}
	if s.jobsKeepLocked(ctx) {
		return
	}
	s.autoCheckpointLocked(ctx, "idle")
	start := time.Now()
	if err := s.removeLocked(ctx); err != nil {
		s.m.log.Warn("idle cleanup failed", "session", s.hash(), "container", s.name, "err", err)
		return
	}
	logEvent(s.m.log, EventIdleCleanup, s, start, "idle_ms", time.Since(last).Milliseconds())
}

// beginEnd marks the session ended, its prestart stopped and its ports
// closed, holding its locks until unlock is called; ok is false when it
// had ended already.
func (s *Session) beginEnd() (unlock func(), ok bool) {
	s.endLife()     // stops a Prestart, which holds mu while it creates
	s.pullMu.Lock() // a read of the changes finishes before the files go
	s.mu.Lock()
	unlock = func() {
		s.mu.Unlock()
		s.pullMu.Unlock()
	}
	if s.ended {
		return unlock, false
	}
	s.ended = true
	s.ports.CloseAll()
	return unlock, true
}

// removeOrRetryLocked removes the container, leaving a removal that fails
// to be retried in the background.
func (s *Session) removeOrRetryLocked(ctx context.Context) error {
	err := s.removeLocked(ctx)
	if err != nil {
		s.m.log.Warn("removing the container failed; retrying in the background", "session", s.hash(), "container", s.name, "err", err)
		s.m.removeLater(s.name)
	}
	return err
}

// end removes the container and, unless they are kept, the session's files.
func (s *Session) end(ctx context.Context) {
	unlock, ok := s.beginEnd()
	defer unlock()
	if !ok {
		return
	}
	start := time.Now()
	had := s.created
	// A pooled container no session took holds nobody's work; a
	// handed-over workspace exports by its own marker, once its container
	// is gone (endHandedOverLocked).
	handedOver := s.kept != nil && s.kept.fromHandoff
	exportNow := s.m.cfg.ExportDir != "" && len(s.mounts) > 0 && s.id() != "" && !handedOver
	if exportNow {
		// The files are final once the jobs have stopped: the export and
		// the container's removal need not wait for each other.
		s.stopJobsLocked(ctx)
	}
	if exportNow && s.m.cfg.FilesOnPodmanHost {
		// The copies are on the Podman host: bring them back while a container holds them.
		if err := s.pullForExportLocked(ctx); err != nil {
			s.m.log.Error("exporting the session's changes failed", "session", s.hash(), "err", err)
			exportNow = false
		}
	}
	exported := make(chan bool, 1)
	if exportNow {
		mounts := s.infoLocked().Mounts
		go func() { exported <- s.exportOnEnd(ctx, time.Now(), mounts) }()
	} else {
		exported <- true
	}
	if err := s.removeOrRetryLocked(ctx); err == nil && s.m.cfg.FilesOnPodmanHost {
		if err := s.m.eng.RemoveWorkspace(ctx, s.name); err != nil {
			s.m.log.Warn("removing the workspace volume at session end failed; retrying in the background", "session", s.hash(), "volume", s.name, "err", err)
			s.m.removeLater(s.name)
		}
	}
	saved := <-exported
	switch {
	case handedOver:
		// Still a session's own: it goes with it, once its changes are exported.
		s.endHandedOverLocked(ctx)
	case s.kept != nil:
		s.unmountDiskLocked()
		s.kept.release(s.meter.Used())
		s.m.log.Info("kept workspace released", "event", "workspace_released", "session", s.hash(), "workspace", s.kept.name)
	case s.m.cfg.KeepSessionDirs:
		s.unmountDiskLocked()
	case !saved && s.exportsOnEnd():
		// Kept, disk and all, for the next server or `wink-mcp export`
		// (exportOnEnd logged how): nothing unexported is deleted.
	default:
		s.deleteFilesLocked()
		if err := removeAll(s.storeDir); err != nil {
			s.m.log.Warn("deleting the session's checkpoints", "session", s.hash(), "err", err)
		}
	}
	if had {
		logEvent(s.m.log, EventRemoved, s, start, "reason", "session ended")
	}
}

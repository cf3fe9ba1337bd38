package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace/createqueue"
	"github.com/wink-mcp/wink-mcp/workspace/images"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// Manager owns the sessions of one server instance and their containers. It
// is safe for concurrent use. Close removes every container it made.
type Manager struct {
	cfg         Config
	log         *slog.Logger
	eng         engine.Engine
	inst        *instance
	agentBinary string
	mounts      mounts.Plan
	// deviceNodes are the device nodes the CDI specs name for each CDI
	// device of the server and its profiles, which each new container
	// given the device must have.
	deviceNodes map[string][]string
	// profilePlans are the mounts of the profiles that add their own.
	profilePlans map[string]mounts.Plan
	disk         *diskTools     // nil when sessions' disks are not limited
	egress       *egress.Config // nil without Config.Egress
	trust        *trust         // nil without Config.Credentials and Config.CABundle
	ssh          *sshLending    // nil without Config.SSHAgent

	pool *warmPool // nil without Config.Warm
	// creations bounds the containers made at once (Config.CreateParallelism).
	creations *createqueue.Queue

	// egressCarried counts the bytes every session's egress proxy carried
	// (EgressBytes), as each session's meter counts them.
	egressCarried atomic.Int64

	images *images.Room // the profiles' images: their builds, and what is known of them

	// serviceUsers holds the uid:gid of image users services run as, by
	// profile and user name (serviceUserKey).
	serviceUsers sync.Map

	rootsMu sync.Mutex
	roots   RootsFunc

	mu       sync.Mutex
	sessions map[string]*Session
	options  map[string]SessionOptions // what Register said of sessions not yet made
	parked   map[string]*parked        // workspaces handed over in this process, by the digest of their handle
	ended    endedSessions
	closed   bool
	ending   sync.WaitGroup // EndSession calls still removing a container; Close waits for them

	// parking counts the handoffs under way that will park a workspace;
	// parkLimit, when set, says why one more may not be parked.
	parking   int
	parkLimit func(waiting int) error
	// handoffTimers delete the workspaces handed to another process that
	// nobody attached (handoffs.expireLater).
	handoffTimers []*time.Timer
	// handedOverDisk is the workspaces handed to another process, on the
	// cache disk.
	handedOverDisk handedOverDisk
	// forks counts the forks being made and waiting (workspace_fork).
	forks forkLedger
	// leftForAdoption are the containers left running for another server
	// that has not adopted them yet (leaveForAdoption).
	leftForAdoption leftContainers

	// leftovers are retries of removals that failed at session end (see
	// removeLater); leftoverCtx ends them when Close runs out of time.
	leftovers     sync.WaitGroup
	leftoverCtx   context.Context
	stopLeftovers context.CancelFunc
	closing       chan struct{} // closed when Close waits for the retries
	onChange      func(ctx context.Context, sessionID string, paths []string)
	askEgress     func(ctx context.Context, sessionID, host string, port int) (bool, error)

	stopReaper context.CancelFunc
	reaperDone chan struct{}

	// liveness is this instance's liveness in the engine's service, when
	// the engine holds instances' liveness; sweeperDone is closed when its
	// periodic sweep (sweepPeriodically) ends, nil without one.
	liveness    *livenessHold
	sweeperDone chan struct{}
}

// NewManager checks cfg, takes this instance's lock under the cache
// directory and returns a Manager backed by cfg.Engine, which it reaches
// on first use. The caller must call Close.
func NewManager(cfg Config, log *slog.Logger) (*Manager, error) {
	if cfg.Engine == nil {
		return nil, errors.New("starting the workspace manager: no container engine in its configuration (Config.Engine)")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin, err := ResolveAgentBinary(cfg.AgentBinary)
	if err != nil && cfg.FilesOnEngineHost && cfg.AgentBinary == "" {
		// This server's own binary cannot be the agent (a macOS or Windows
		// build): the engine copies one this build carries, or says why not.
		bin, err = "", nil
	}
	if err != nil {
		return nil, err
	}
	return newManager(cfg, log, cfg.Engine, bin)
}

func newManager(cfg Config, log *slog.Logger, eng engine.Engine, agentBinary string) (*Manager, error) {
	plan, err := cfg.planMounts()
	if err != nil {
		return nil, err
	}
	profilePlans := map[string]mounts.Plan{}
	for name, extra := range cfg.ProfileMounts {
		c := cfg
		c.Mounts = append(slices.Clone(cfg.Mounts), extra...)
		pp, err := c.planMounts()
		if err != nil {
			return nil, fmt.Errorf("profile %q's mounts: %w", name, err)
		}
		profilePlans[name] = pp
	}
	policy, err := egress.ParsePolicy(cfg.Egress)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating cache directory: %w", err)
	}
	inst, err := newInstance(cfg.CacheDir, cfg.KeepSessionDirs)
	if err != nil {
		return nil, err
	}
	countKeptCheckpoints(cfg.CacheDir, cfg.Quotas, log)
	ctx, stop := context.WithCancel(context.Background())
	m := &Manager{
		cfg: cfg, log: log, eng: eng, inst: inst, agentBinary: agentBinary, mounts: plan, profilePlans: profilePlans,
		sessions: map[string]*Session{}, options: map[string]SessionOptions{}, parked: map[string]*parked{}, stopReaper: stop, reaperDone: make(chan struct{}),
		creations: createqueue.New(cfg.CreateParallelism),
	}
	m.leftoverCtx, m.stopLeftovers = context.WithCancel(context.Background())
	m.handedOverDisk = handedOverDisk{cacheDir: cfg.CacheDir, log: log}
	m.images = images.NewRoom(images.Deps{
		Engine: eng, Log: log, Profiles: cfg.Profiles, ImageChoices: cfg.ImageChoices(), ImageFixed: cfg.Image != "",
		BuildLocks: filepath.Join(cfg.CacheDir, "builds"), TryLock: tryLockBusy,
		EnsureImage: func(ctx context.Context) (string, error) {
			image, err := eng.EnsureImage(ctx, cfg.ImageChoices())
			return image, withImageRemedy(err)
		},
		Setup: m.setup, Session: m.sessionImage, PushedRepository: cfg.PushedProfileRepository,
		BuildProject: projectBuilder(m),
	})
	m.closing = make(chan struct{})
	if m.deviceNodes, err = cdiDeviceNodes(cfg.CDIDevices, cfg.Profiles); err != nil {
		return nil, err
	}
	if m.trust, err = newTrust(&cfg); err != nil {
		return nil, err
	}
	if m.ssh, err = newSSHLending(&cfg); err != nil {
		return nil, err
	}
	if cfg.EgressOn() {
		m.egress = &egress.Config{Policy: policy.From(serverEgressSource), MaxBytes: cfg.EgressMaxBytes, MaxConns: cfg.EgressMaxConns, Log: log}
	}
	switch {
	case cfg.DiskBytes > 0 && cfg.FilesOnEngineHost && eng.Service().BoundsDisk:
		// The engine's service bounds the files itself (engine.Service.BoundsDisk).
	case cfg.DiskBytes > 0 && cfg.FilesOnEngineHost:
		log.Warn("sessions can fill the Podman host's disk", "err", ErrDiskLimitUnavailable.Error()+
			": the sessions' files are volumes on the Podman host (--files-on-podman-host), which wink-mcp cannot bound; pass --disk-limit 0 to silence this")
	case cfg.limitsDisks():
		if tools, err := findDiskTools(); err != nil {
			log.Warn("sessions can fill the cache disk", "err", err)
		} else {
			m.disk = &tools
		}
	}
	go m.reapIdle(ctx)
	m.liveness = newLivenessHold(eng, inst, log)
	if m.liveness.of != nil {
		m.sweeperDone = make(chan struct{})
		go m.sweepPeriodically(ctx)
	}
	if cfg.Warm > 0 {
		m.pool = newWarmPool(m, cfg.Warm)
	}
	log.Info("workspace manager ready", "instance", inst.id, "cache_dir", cfg.CacheDir, "image", strings.Join(cfg.ImageChoices(), " or "), "idle_timeout", cfg.IdleTimeout.String())
	for _, mt := range plan.Mounts {
		log.Info("host folder mounted in every workspace", "host_path", mt.HostPath, "path", Root+"/"+mt.Path, "mode", mt.Mode)
	}
	return m, nil
}

// Session returns the workspace of the MCP session with this ID, making an
// entry for it on first use: with a container from the pool when one is
// ready, else with none until a call (or Session.Prestart) makes it.
func (m *Manager) Session(id string) (*Session, error) {
	m.mu.Lock()
	_, made := m.sessions[id]
	opts := m.options[id]
	m.mu.Unlock()
	var held *engine.Held
	switch {
	case made || opts.Workspace == "" && opts.Roaming == "":
	case m.cfg.FilesOnEngineHost:
		// Not under m.mu either: API calls, and maybe a dead holder's lease.
		profile, err := m.sessionProfile(opts)
		if err != nil {
			return nil, err
		}
		if held, err = m.holdInEngine(m.SessionHash(id), opts, profile); err != nil {
			return nil, err
		}
		if held != nil {
			defer func() {
				if held != nil { // not given to a session
					held.Release(context.Background())
				}
			}()
		}
	case opts.Roaming != "":
		return nil, errRoamingNeedsAdopter
	default:
		awaitKeptOwner(m.cfg.CacheDir, opts.Workspace, m.log) // not under m.mu: it may take seconds
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.ended.has(id) {
		return nil, ErrSessionEnded
	}
	if s, ok := m.sessions[id]; ok {
		return s, nil
	}
	hash := m.SessionHash(id)
	opts = m.options[id]
	profile, err := m.sessionProfile(opts)
	if err != nil {
		return nil, err
	}
	if opts.Workspace != "" {
		s, err := m.newKeptSession(id, hash, opts, held)
		if err != nil {
			return nil, err
		}
		held = nil
		s.profileSwitch.setLocked(profile)
		shareEgressQuota(s, m.cfg.Quotas)
		delete(m.options, id)
		m.sessions[id] = s
		return s, nil
	}
	delete(m.options, id)
	var s *Session
	if m.pool != nil && profile == m.defaultProfile() && held == nil { // a pooled container is labelled as no roaming workspace
		// A pooled container counts against the principal's quotas from
		// now; past them, the session makes its own, which says why not.
		if hold, err := m.cfg.Quotas.Try(opts.Principal, containerAmounts(profileLimits(m.cfg.Limits, profile))); err == nil {
			if s = m.pool.Take(); s != nil { // pooled containers run the default profile
				s.containerQuota = hold // no call can find s yet
			} else {
				hold.Release()
			}
		}
	}
	if s != nil {
		s.who.serve(id, hash)
		s.principal, s.stdio = opts.Principal, opts.Stdio // before any call can find it
		if s.proxy != nil {
			s.proxy.SetID(hash)
		}
		s.lastUsed.Store(time.Now().UnixNano())
		s.opened = time.Now()
		logEvent(m.log, EventTakenFromPool, s, time.Now())
	} else {
		s = m.newSession(id, hash)
		s.principal, s.stdio = opts.Principal, opts.Stdio
		s.profileSwitch.setLocked(profile)
	}
	if held != nil {
		s.roaming = &roamingWorkspace{name: opts.Roaming, held: held, onWanted: opts.OnWanted}
		if err := openRoamingStore(&m.cfg, s); err != nil {
			return nil, err // held is released
		}
		s.egressPolicy.restoreNarrowing() // what it took away on another replica stays away
		held = nil
	}
	shareEgressQuota(s, m.cfg.Quotas)
	m.sessions[id] = s
	return s, nil
}

// sessionProfile returns the profile a session starts with.
func (m *Manager) sessionProfile(opts SessionOptions) (*profiles.Profile, error) {
	if opts.Profile == "" {
		return m.defaultProfile(), nil
	}
	return m.cfg.Profiles.Get(opts.Profile)
}

// newKeptSession returns a session that owns the kept workspace opts
// names, or why it cannot; held is the workspace as the engine holds it,
// nil unless the engine keeps kept workspaces (kept_engine.go).
func (m *Manager) newKeptSession(id, hash string, opts SessionOptions, held *engine.Held) (*Session, error) {
	if held != nil && opts.Workspace != "" {
		return m.newHeldSession(id, hash, opts, held)
	}
	if m.cfg.FilesOnEngineHost {
		return nil, errors.New("kept workspaces need the session's files on this machine, and this server keeps them on the Podman host " +
			"(--files-on-podman-host); connect without a workspace name")
	}
	k, err := claimWorkspace(m.cfg.CacheDir, opts, m.inst, hash)
	if err != nil {
		return nil, err
	}
	s := m.newSession(id, hash)
	s.principal, s.stdio, s.kept = opts.Principal, opts.Stdio, k
	s.dir, s.diskFile, s.storeDir = k.sessionDir(), k.diskImage(), k.storeDir()
	// The count goes on from what it carried under its earlier owners.
	s.meter.RaiseTo(k.egressBytes)
	if _, err := s.checkpoints.Store(); err != nil { // finds a restore its last owner did not finish
		k.release(0)
		return nil, err
	}
	k.recordEgress(s.meter, m.log)
	s.egressPolicy.restoreNarrowing() // what its earlier sessions took away stays away
	m.log.Info("kept workspace opened", "event", "workspace_opened", "session", hash, "workspace", k.name)
	return s, nil
}

// newSession returns a session without a container whose container and
// directory are named after key.
func (m *Manager) newSession(id, key string) *Session {
	s := &Session{m: m, key: key, name: containerName(m.cfg.NamePrefix, key), dir: m.inst.sessionDir(key),
		diskFile: filepath.Join(m.inst.dir, disksDir, key+".img"), gate: newGate(), storeDir: m.inst.storeDir(key)}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.mounts.s = s
	s.ports = s.newPorts()
	s.services = newServices(s)
	s.handoffs = &handoffs{s: s}
	s.forks = &forks{s: s}
	s.digests = &digests{s: s}
	s.profileSwitch = &profileSwitch{s: s}
	s.jobs = s.newJobs()
	s.checkpoints = s.newCheckpoints()
	s.folders = s.newFolders()
	s.watcher = s.newWatcher()
	s.files = s.newFiles()
	s.lastUsed.Store(time.Now().UnixNano())
	s.opened = time.Now()
	s.who.serve(id, key)
	s.meter = egress.NewMeter(m.cfg.EgressMaxBytes, 0).AlsoCountIn(&m.egressCarried)
	s.egressPolicy = &egressPolicy{s: s, narrowing: egress.NewNarrowing()}
	s.profileSwitch.setLocked(m.defaultProfile())
	return s
}

// Images is the room of the profiles' images: their builds, and which
// image a session runs or will run.
func (m *Manager) Images() *images.Room { return m.images }

// OnEgressAsk sets the function that asks a session's user whether it may
// reach a host no --egress pattern allows (Config.EgressAsk). Set it
// before the first session.
func (m *Manager) OnEgressAsk(f func(ctx context.Context, sessionID, host string, port int) (bool, error)) {
	m.mu.Lock()
	m.askEgress = f
	m.mu.Unlock()
}

// OnChange sets the function told which paths a session's tools or
// commands wrote, edited or removed ("" for anything), after each change,
// with the context of the call that changed them, or one without a call
// for the changes reported apart from calls. It is called synchronously and must not block. Set it
// before the first session.
func (m *Manager) OnChange(f func(ctx context.Context, sessionID string, paths []string)) {
	m.mu.Lock()
	m.onChange = f
	m.mu.Unlock()
}

// changed tells the change listener, if any, about changed paths.
func (m *Manager) changed(ctx context.Context, sessionID string, paths ...string) {
	m.mu.Lock()
	f := m.onChange
	m.mu.Unlock()
	if f != nil && len(paths) > 0 {
		f(ctx, sessionID, paths)
	}
}

// SessionHash returns the name a session goes by in logs and container
// names; the raw session ID is never logged.
func (m *Manager) SessionHash(id string) string { return sessionHash(m.inst.secret, id) }

// EndSession removes the session's container and files. The ID is
// remembered as ended: a request of the session still in flight gets
// ErrSessionEnded from Session rather than a new container.
func (m *Manager) EndSession(ctx context.Context, id string) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	delete(m.sessions, id)
	delete(m.options, id)
	m.ended.add(id)
	if ok {
		m.ending.Add(1)
	}
	m.mu.Unlock()
	if ok {
		defer m.ending.Done()
		s.end(ctx)
	}
}

// Close ends every session, removing their containers in parallel, waits
// for sessions already being ended, and releases the instance. ctx bounds
// the shutdown; containers that could not be removed in time are swept by
// the next wink-mcp to start.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	sessions := m.sessions
	m.sessions = nil
	for key, p := range m.parked {
		p.timer.Stop()
		sessions[key] = p.s
	}
	m.parked = nil
	for _, t := range m.handoffTimers {
		t.Stop() // the next wink-mcp to start deletes what they would have
	}
	m.mu.Unlock()

	m.stopReaper()
	<-m.reaperDone
	if m.sweeperDone != nil {
		<-m.sweeperDone
	}
	m.images.Close() // each build removes its setup container as it ends
	var wg sync.WaitGroup
	if m.pool != nil {
		wg.Go(func() { m.pool.Close(ctx) })
	}
	leaveRoamingOnClose(sessions)
	for _, s := range sessions {
		wg.Go(func() { s.end(ctx) })
	}
	wg.Wait()
	m.ending.Wait() // each bounded by its caller's context
	m.leftForAdoption.removeAll(ctx, m)
	m.finishLeftovers(ctx)
	kept := keptForExport(m.cfg.CacheDir, m.inst.dir)
	err := errors.Join(m.liveness.release(ctx), m.inst.release(!m.cfg.KeepSessionDirs && len(kept) == 0))
	kept = append(kept, handedOverKept(m.cfg.CacheDir)...)
	if len(kept) > 0 {
		err = errors.Join(err, fmt.Errorf("%w: %s", ErrChangesKept, strings.Join(kept, "; ")))
	}
	return err
}

// ErrChangesKept is returned by Close when some sessions' changes could
// not be exported in time (Config.ExportDir): their files stay in the
// cache directory, the error says where, and the next server to start on
// it exports them, as `wink-mcp export` can.
var ErrChangesKept = errors.New("changes not exported yet are kept")

// KeptForExport describes the sessions of this server, and the
// handed-over workspaces nothing holds, whose changes wait to be
// exported, with where they are and how to export them; it is safe to
// call while the server shuts down.
func (m *Manager) KeptForExport() []string {
	return append(keptForExport(m.cfg.CacheDir, m.inst.dir), handedOverKept(m.cfg.CacheDir)...)
}

package workspace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
	"github.com/wink-mcp/wink-mcp/workspace/steps"
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

// mountDiskLocked gives the session directory a filesystem of its own,
// the size of the disk limit, before anything is written to it.
func (s *Session) mountDiskLocked(ctx context.Context) error {
	size := profileLimits(s.m.cfg.Limits, s.profile).DiskBytes
	if s.disk || s.m.disk == nil || size == 0 || s.setupBase != "" {
		return nil
	}
	size, err := s.handoffs.diskBudget(size)
	if err != nil {
		return err
	}
	mount := s.m.disk.Mount
	if s.kept != nil {
		mount = s.m.disk.MountKept
	}
	if err := mount(ctx, s.diskFile, s.dir, size); err != nil {
		return err
	}
	s.disk = true
	return nil
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
	image, _, err := s.m.images.Image(ctx, p, nil)
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
		err := s.connectLocked(ctx, steps.Start())
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

// containerAmounts is what a container of limits holds of its principal's
// quotas.
func containerAmounts(l engine.Limits) quota.Amounts {
	return quota.Amounts{quota.MemoryBytes: l.MemoryBytes, quota.MilliCPUs: int64(math.Round(l.CPUs * 1000))}
}

// shareEgressQuota makes s's egress count against its principal's egress
// quota too, if ledger has one; called before any call can find s.
func shareEgressQuota(s *Session, ledger *quota.Ledger) {
	if b := ledger.Egress(s.principal); b != nil {
		s.meter.ShareBudget(b)
	}
}

// createLocked creates, starts and connects to a new container.
func (s *Session) createLocked(ctx context.Context) (*wire.Client, error) {
	start := time.Now()
	times := steps.Start()
	m := s.m
	image := s.setupBase
	if image == "" && s.prepared.profile == s.profile {
		image = s.prepared.image
	}
	s.prepared = preparedImage{}
	if image == "" {
		var err error
		if image, _, err = m.images.Image(ctx, s.profile, nil); err != nil {
			return nil, err
		}
	}
	s.image = image
	s.seen.Store(&PlannedImage{Image: image, Profile: profileName(s.profile)})
	times.Done("image")
	// The engine makes containers one at a time per core: past
	// --create-parallelism they wait here, not in the engine's calls,
	// whose --podman-timeout counts from their start.
	endTurn, err := waitCreationTurn(ctx, s)
	if err != nil {
		return nil, err
	}
	defer endTurn()
	times.Done("turn")
	if err := s.mountDiskLocked(ctx); err != nil {
		return nil, err
	}
	times.Done("disk")
	host, settled, err := m.eng.Host(ctx)
	if err != nil {
		return nil, err
	}
	times.Done("host_facts")
	if err := limitsError(host, m.cfg.AllowUnenforcedLimits); err != nil {
		return nil, err
	}
	if err := s.mounts.resolveLocked(ctx, host.Markers); err != nil {
		return nil, err
	}
	user, keepID := m.identity(host.Rootless, s)
	s.user = user
	uid, gid := parseUser(user)
	if m.cfg.FilesOnEngineHost {
		if err := mounts.PrepareRemote(s.mounts.list); err != nil {
			return nil, err
		}
	} else {
		if err := m.prepareWorkspaceDir(s.workspaceDir(), user); err != nil {
			return nil, err
		}
		if err := mounts.Prepare(s.workspaceDir(), s.mounts.list, uid, gid); err != nil {
			return nil, err
		}
	}
	times.Done("prepare_dirs")
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
	if err := m.liveness.ensure(ctx, m.inst.id); err != nil {
		return nil, err
	}
	if s.who.id() != "" { // a pooled container counts from when a session takes it
		hold, err := m.cfg.Quotas.Reserve(s.principal, containerAmounts(spec.Limits))
		if err != nil {
			return nil, err
		}
		s.containerQuota = hold
	}
	if adoptContainer(ctx, s, spec, times) {
		logEvent(m.log, EventAdopted, s, start, "steps", times.String())
		return s.client, nil
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
	if err == nil && m.cfg.FilesOnEngineHost {
		err = s.mounts.uploadCopiesLocked(ctx, uid, gid)
	}
	if err != nil {
		return fail(err)
	}
	times.Done("create")
	network, pids, nofile, nproc := "none", spec.PidsLimit, spec.NofileLimit, spec.NprocLimit
	if m.eng.Service().Pods {
		// A Pod has eth0, cut off by a deny-all NetworkPolicy; a pids limit
		// and rlimits are no Pod settings (engine.Service.Pods).
		network, pids, nofile, nproc = "deny-all NetworkPolicy", 0, 0, 0
	}
	logEvent(m.log, EventCreated, s, start, "image", spec.Image, "user", spec.User, "memory_bytes", spec.MemoryBytes,
		"cpus", spec.CPUs, "pids_limit", pids, "tmp_bytes", spec.TmpBytes, "nofile", nofile,
		"nproc", nproc, "network", network, "cap_drop", "ALL", "no_new_privileges", true, "keep_id", keepID, "mounts", len(spec.Mounts),
		"unenforced_limits", s.unenforced)
	if err := m.eng.Start(ctx, s.name); err != nil {
		return fail(m.images.ExplainUnpushed(s.profile, err))
	}
	times.Done("start")
	s.startedAt = time.Now()
	logEvent(m.log, EventStarted, s, start)
	if err := s.connectLocked(ctx, times); err != nil {
		return fail(fmt.Errorf("the workspace container %s started but its agent did not answer: %w", s.name, err))
	}
	if s.setupBase == "" { // a setup's container runs in the root
		if err := makeWorkdir(ctx, s.client, s.profile); err != nil {
			return fail(err)
		}
		if err := checkDeviceNodes(ctx, s.client, deviceNodesOf(s.m.deviceNodes, sessionDevices(s.m.cfg.CDIDevices, s.profile))); err != nil {
			return fail(err)
		}
		if err := cloneRepo(ctx, s.client, sessionRepo(s.profile, m.cfg.Repo)); err != nil {
			return fail(err)
		}
		if err := runPostCreate(ctx, s.client, s.profile); err != nil {
			return fail(err)
		}
	}
	if !settled {
		// Made from facts an earlier process recorded: used only once the
		// service confirms them, else made again from its answer.
		now, err := m.eng.SettledHost(ctx)
		if err != nil {
			return fail(err)
		}
		times.Done("host_facts_confirmed")
		if now != host {
			m.log.Warn("the Podman service's host changed since an earlier process recorded it; making the container again",
				"session", s.who.hash(), "recorded", host, "now", now)
			if err := remove(); err != nil {
				return nil, fmt.Errorf("removing a container made from outdated host facts: %w", err)
			}
			s.mounts.list, s.mounts.resolved = nil, false
			endTurn() // the next attempt waits its own turn
			return s.createLocked(ctx)
		}
	}
	logEvent(m.log, EventReady, s, start, "steps", times.String())
	return s.client, nil
}

// connectLocked opens a channel to the agent and waits for it to answer,
// recording both steps in times.
func (s *Session) connectLocked(ctx context.Context, times *steps.Times) error {
	stream, err := s.m.eng.OpenChannel(ctx, s.name)
	if err != nil {
		return err
	}
	times.Done("channel")
	client := wire.NewClient(stream, stream)
	pingCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := client.Call(pingCtx, wire.OpPing, nil, nil); err != nil {
		stream.Close()
		return fmt.Errorf("waiting for the agent: %w", err)
	}
	times.Done("agent_ping")
	if err := s.watcher.Start(pingCtx, client); err != nil {
		stream.Close()
		return err
	}
	times.Done("watch")
	if s.proxy != nil {
		if err := s.openTunnelLocked(ctx); err != nil {
			stream.Close()
			return err
		}
		times.Done("egress_tunnel")
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
	s.client, s.stream, s.tunnel, s.tunnelPorts = nil, nil, nil, nil
}

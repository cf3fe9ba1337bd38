package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/images"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// ProfileChange is what a change of a session's profile did.
type ProfileChange struct {
	// Profile is the profile the session now uses; Previous the one before
	// ("" for the server's settings alone).
	Profile, Previous string
	// Image is the image its containers start from.
	Image string
	// Built says this call waited for the image's setup to run.
	Built bool
	// Restarted says a container that had served calls was replaced: its
	// processes ended, its files in /workspace stayed.
	Restarted bool
	// Container is the container now running.
	Container ContainerInfo
}

// ErrProfileInUse is wrapped when a session asks for another profile once
// its container has served calls, without asking for a restart.
var ErrProfileInUse = fmt.Errorf("the workspace container already runs another profile")

// Profiles returns the profiles sessions may choose (nil without any).
func (m *Manager) Profiles() *profiles.File { return m.cfg.Profiles }

// defaultProfile is the profile of a session that chooses none.
func (m *Manager) defaultProfile() *profiles.Profile {
	name := m.cfg.Profile
	if name == "" && m.cfg.Profiles != nil {
		name = m.cfg.Profiles.Default
	}
	if name == "" {
		return nil
	}
	p, _ := m.cfg.Profiles.Get(name) // Config.Validate checked it
	return p
}

// profileSwitch is the part of a session that changes its profile
// (tools.ProfileSwitcher) and sets the profile's egress proxy.
//
// It holds its session, not a narrower set of functions: the profile,
// the proxy and the container made from them are the session's life
// cycle's, read under Session.mu by what makes a container (and written
// there by a setup's build), so a change of profile takes Session.mu and
// replaces the container as a Session method would.
type profileSwitch struct {
	s *Session
}

// UseProfile makes the session use the profile called name: its image
// (built first if its setup has not run yet), environment, limits, working
// directory and egress. A container that has served calls under another
// profile is replaced only with restart; one made ahead of the first call
// is replaced without it.
func (ps *profileSwitch) UseProfile(ctx context.Context, name string, restart bool, progress func(Progress)) (ProfileChange, error) {
	s := ps.s
	defer s.enter()()
	p, err := s.m.cfg.Profiles.Get(name)
	if err != nil {
		return ProfileChange{}, err
	}
	// Refused at once, before a build that may take minutes.
	if err := ps.checkChange(p, restart); err != nil {
		return ProfileChange{}, err
	}
	image, built, err := s.m.images.Image(ctx, p, progress)
	if err != nil {
		return ProfileChange{}, err
	}
	res := ProfileChange{Profile: name, Image: image, Built: built}
	s.mu.Lock()
	res.Previous = profileName(s.profile)
	if s.ended {
		s.mu.Unlock()
		return res, ErrSessionEnded
	}
	if s.profile != p {
		if err := ps.changeErrLocked(p, restart); err != nil {
			s.mu.Unlock()
			return res, err
		}
		res.Restarted = s.created && s.used.Load()
		if res.Restarted && s.filesGoWithContainer() {
			// The files go with the container: the next one gets them back.
			if err := s.checkpoints.Hibernate(ctx, s.client, "profile switch"); err != nil {
				s.mu.Unlock()
				return res, fmt.Errorf("saving the files for the new container, which the old one takes with it: %w; the container is unchanged, try again", err)
			}
		}
		if err := s.removeLocked(ctx); err != nil {
			s.mu.Unlock()
			return res, err
		}
		if s.mounts.resolved && !sameMounts(s.m.planOf(p), s.mountPlan()) {
			// No call has run (changeErrLocked): the folders are
			// fixed again for the new profile, from nothing.
			if err := s.mounts.forgetLocked(ctx); err != nil {
				s.mu.Unlock()
				return res, err
			}
		}
		ps.setLocked(p)
		s.m.log.Info("workspace profile chosen", "session", s.who.hash(), "profile", name, "previous", res.Previous, "restarted", res.Restarted)
	}
	s.mu.Unlock()
	if _, err := s.ensure(ctx); err != nil {
		return res, err
	}
	res.Container = s.Info()
	return res, nil
}

// mountPlan is the plan of the session's mounts: its profile's, when the
// profile adds some, else the server's.
func (s *Session) mountPlan() mounts.Plan {
	return s.m.planOf(s.profile)
}

// planOf is the mount plan of the sessions of profile p.
func (m *Manager) planOf(p *profiles.Profile) mounts.Plan {
	if p != nil {
		if plan, ok := m.profilePlans[p.Name]; ok {
			return plan
		}
	}
	return m.mounts
}

// sameMounts says whether two plans mount the same folders the same way.
func sameMounts(a, b mounts.Plan) bool {
	return slices.EqualFunc(a.Mounts, b.Mounts, func(x, y mounts.Resolved) bool {
		return x.HostPath == y.HostPath && x.Path == y.Path && x.Mode == y.Mode
	})
}

// checkChange says why the session cannot change to p, if it cannot.
func (ps *profileSwitch) checkChange(p *profiles.Profile, restart bool) error {
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	return ps.changeErrLocked(p, restart)
}

// changeErrLocked refuses a change to p, without restart, of a container
// that has served calls under another profile.
func (ps *profileSwitch) changeErrLocked(p *profiles.Profile, restart bool) error {
	s := ps.s
	if s.profile == p {
		return nil
	}
	if (s.used.Load() || s.kept != nil) && s.mounts.resolved && !sameMounts(s.m.planOf(p), s.mountPlan()) {
		return fmt.Errorf("%w: %s mounts other host folders than this session's, and a session's folders are fixed once it has "+
			"run calls or keeps a workspace (their changes are its work). Start a new session with that profile (?profile=%s over HTTP, --profile %s over stdio)",
			ErrProfileInUse, displayProfile(p), p.Name, p.Name)
	}
	if restart || !s.created || !s.used.Load() {
		return nil
	}
	return fmt.Errorf("%w (%s): its processes would end. Call again with restart: true to replace the container "+
		"(the files in /workspace stay), or stay with %s", ErrProfileInUse, displayProfile(s.profile), displayProfile(s.profile))
}

// setLocked makes p the session's profile, with the egress its sessions
// get; the caller holds Session.mu, or has the session to itself.
func (ps *profileSwitch) setLocked(p *profiles.Profile) {
	s := ps.s
	s.profile = p
	s.seen.Store(&PlannedImage{Profile: profileName(p)})
	s.proxy = ps.proxyFor(p)
}

// proxyFor returns the egress proxy of the session under profile p: the
// server's patterns and the profile's session patterns; nil for none.
func (ps *profileSwitch) proxyFor(p *profiles.Profile) *egress.Session {
	s, m := ps.s, ps.s.m
	var extra []string
	if p != nil {
		extra = p.Egress.Session
	}
	if m.egress == nil && len(extra) == 0 {
		return nil
	}
	cfg := egress.Config{MaxBytes: m.cfg.EgressMaxBytes, MaxConns: m.cfg.EgressMaxConns, Log: m.log}
	if m.egress != nil {
		cfg = *m.egress
	}
	cfg.Meter = s.meter                      // a new profile's proxy goes on counting
	cfg.Narrowing = s.egressPolicy.narrowing // and keeps what the session dropped
	cfg.Inject = m.trust.injection(profileName(p))
	if len(extra) > 0 {
		// Checked when the profiles file was read.
		server, err := egress.ParsePolicy(m.cfg.Egress)
		profile, perr := egress.ParsePolicy(extra)
		if err = errors.Join(err, perr); err != nil {
			m.log.Error("a profile's egress patterns no longer parse", "err", err)
			return nil
		}
		cfg.Policy = server.From(serverEgressSource).Join(profile.From("profile " + p.Name + " (egress.session)"))
		cfg.Wording = images.SessionWording(p)
	}
	m.ssh.lend(&cfg, p) // after the policy is whole: it adds port 22
	if m.cfg.EgressAsk {
		cfg.Ask = func(ctx context.Context, host string, port int) (bool, error) {
			m.mu.Lock()
			ask := m.askEgress
			m.mu.Unlock()
			if ask == nil {
				return false, fmt.Errorf("no client to ask")
			}
			return ask(ctx, s.who.id(), host, port)
		}
	}
	return egress.NewSession(cfg, s.key)
}

// profileLimits are the limits of the containers of a session of profile
// p: the server's, with what p changes.
func profileLimits(server engine.Limits, p *profiles.Profile) engine.Limits {
	l := server
	if p == nil {
		return l
	}
	pl := p.Limits
	l.MemoryBytes = cmp.Or(pl.MemoryBytes, l.MemoryBytes)
	l.CPUs = cmp.Or(pl.CPUs, l.CPUs)
	l.PidsLimit = cmp.Or(pl.Pids, l.PidsLimit)
	l.NprocLimit = max(l.NprocLimit, uint64(l.PidsLimit))
	l.TmpBytes = cmp.Or(pl.TmpBytes, l.TmpBytes)
	if pl.DiskBytes != nil {
		l.DiskBytes = *pl.DiskBytes
	}
	return l
}

// containerEnv is the environment of the container of a session of
// profile p under cfg: the egress proxy's (when it has one), the
// profile's, the server's variables passed on (--env-pass) and the git
// identity (--git-identity).
func containerEnv(cfg *Config, p *profiles.Profile, proxied bool) map[string]string {
	env := map[string]string{}
	if proxied {
		maps.Copy(env, proxyEnv())
	}
	if p != nil {
		maps.Copy(env, p.Env)
	}
	maps.Copy(env, cfg.PassedEnv)
	maps.Copy(env, cfg.GitIdentity.env())
	return env
}

// commandTimeout is the timeout of a command that gives none in a session
// of profile p: the profile's, else 0 (the tool's own default).
func commandTimeout(p *profiles.Profile) time.Duration {
	if p == nil {
		return 0
	}
	return p.Limits.CommandTimeout
}

// commandDir is where a command that names dir runs: dir, or the
// profile's working directory when dir is "".
func (s *Session) commandDir(dir string) string {
	if dir != "" {
		return dir
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.profile == nil || s.setupBase != "" {
		return ""
	}
	return s.profile.Workdir
}

// makeWorkdir creates profile p's working directory in a new container,
// through its agent's client, as its user, so that commands can run there
// at once.
func makeWorkdir(ctx context.Context, client *wire.Client, p *profiles.Profile) error {
	if p == nil || p.Workdir == "" {
		return nil
	}
	var res ExecResult
	dir := Root + "/" + p.Workdir
	// Relative to the agent's working directory, the workspace's root.
	err := client.Call(ctx, wire.OpExec, wire.ExecArgs{Argv: []string{"mkdir", "-p", "--", p.Workdir}, TimeoutMillis: 10_000,
		Capture: true, OutputLimit: 4096}, &res)
	if err == nil && res.ExitCode != 0 {
		err = errors.New(strings.TrimSpace(res.Stderr))
	}
	if err != nil {
		return fmt.Errorf("creating profile %q's working directory %s: %w", p.Name, dir, err)
	}
	return nil
}

func profileName(p *profiles.Profile) string {
	if p == nil {
		return ""
	}
	return p.Name
}

// displayProfile names a profile in a message.
func displayProfile(p *profiles.Profile) string {
	if p == nil {
		return "the server's default settings (no profile)"
	}
	return fmt.Sprintf("profile %q", p.Name)
}

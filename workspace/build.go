package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

// The profile images' names and labels are package images'.

// ProfileImageRepo names the images profiles' setups build.
const ProfileImageRepo = images.ProfileImageRepo

// Labels of a profile's image.
const (
	LabelProfile     = images.LabelProfile
	LabelProfileKey  = images.LabelProfileKey
	LabelProfileBase = images.LabelProfileBase
	// LabelProfileFile is the identity of the profiles file the image's
	// profile comes from (profiles.Profile.FileID): only that file's
	// builds and prunes remove it.
	LabelProfileFile = images.LabelProfileFile
)

// buildOutputLimit is what a setup command's result keeps of each stream;
// a failure shows the end of it, where a package manager says what went wrong.
const buildOutputLimit = 1 << 20

// ErrSetupFailed is wrapped by the error of a profile whose setup failed.
var ErrSetupFailed = errors.New("the profile's setup failed")

// BuildProfile builds the image of the profile called name unless it is
// built; it returns the image and whether it ran the setup.
func (m *Manager) BuildProfile(ctx context.Context, name string, progress func(Progress)) (string, bool, error) {
	p, err := m.cfg.Profiles.Get(name)
	if err != nil {
		return "", false, err
	}
	return m.profileImage(ctx, p, progress)
}

// profileImage returns the image sessions under p start from, building it
// first when its setup has not run; built says this call waited for that.
func (m *Manager) profileImage(ctx context.Context, p *profiles.Profile, progress func(Progress)) (image string, built bool, err error) {
	defer func() {
		if err == nil && p != nil {
			m.known.Set(p.Name, image)
		}
	}()
	if p == nil {
		image, err := m.ensureImage(ctx)
		return image, false, err
	}
	base, err := m.profileBase(ctx, p)
	if err != nil || len(p.Setup) == 0 {
		return base, false, err
	}
	id, err := m.eng.ImageID(ctx, base)
	if err != nil {
		return "", false, err
	}
	key := p.ImageKey(id)
	if _, ok, err := images.Find(ctx, m.eng, p, key); err != nil || ok {
		return images.Name(p, key), false, err
	}
	// The build is the manager's, not the caller's: a session that stops
	// waiting leaves it to finish for the next.
	b := m.builds.Start(key, func(ctx context.Context, b *images.Build) (string, bool, error) {
		return m.runBuild(ctx, p, base, id, key, b)
	})
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-b.Done():
			return b.Result()
		case <-ctx.Done():
			return "", false, fmt.Errorf("waiting for profile %q's setup (it goes on, for the next session): %w", p.Name, ctx.Err())
		case <-tick.C:
			if progress != nil {
				progress(b.Report())
			}
		}
	}
}

// profileBase returns p's base image, pulled if need be.
func (m *Manager) profileBase(ctx context.Context, p *profiles.Profile) (string, error) {
	if p.Image == "" {
		return m.ensureImage(ctx)
	}
	image, err := m.eng.EnsureImage(ctx, []string{p.Image})
	if err != nil {
		return "", fmt.Errorf("profile %q: %w", p.Name, err)
	}
	return image, nil
}

// runBuild builds the image of key, unless another process built it while
// this one waited for the lock; ran says it did.
func (m *Manager) runBuild(ctx context.Context, p *profiles.Profile, base, baseID, key string, b *images.Build) (image string, ran bool, err error) {
	image = images.Name(p, key)
	b.SetStatus("waiting for another wink-mcp building the same image")
	unlock, err := m.lockBuild(ctx, key)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	if _, ok, err := images.Find(ctx, m.eng, p, key); err != nil || ok {
		return image, false, err
	}
	start := time.Now()
	m.log.Info("profile setup started", "event", EventSetupStarted, "profile", p.Name, "base", base, "image", image, "commands", len(p.Setup))
	if err := m.setup(ctx, p, base, baseID, key, image, b); err != nil {
		m.log.Warn("profile setup failed", "event", EventSetupFailed, "profile", p.Name, "duration_ms", time.Since(start).Milliseconds(), "err", err)
		return "", false, err
	}
	img, _, err := images.Find(ctx, m.eng, p, key)
	if err != nil {
		return "", false, err
	}
	m.log.Info("profile image built", "event", EventImageBuilt, "profile", p.Name, "image", image, "size_bytes", img.Size, "duration_ms", time.Since(start).Milliseconds())
	images.PruneOlder(ctx, m.eng, m.log, p, key)
	return image, true, nil
}

// setup runs p's setup commands in a container from base and commits it.
// The container goes whatever happens, and no image is left of a failure.
func (m *Manager) setup(ctx context.Context, p *profiles.Profile, base, baseID, key, image string, b *images.Build) (err error) {
	s := m.newSession("", "setup-"+key[:20])
	s.profile, s.setupBase = p, base
	refusals := images.NewSetupRefusals(p)
	s.proxy = m.setupProxy(s, p, refusals)
	defer func() {
		endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.APITimeout)
		defer cancel()
		s.end(endCtx)
	}()
	b.SetStatus("starting the setup container from " + base)
	if _, err := s.Start(ctx); err != nil {
		return fmt.Errorf("%w: starting its container from %s: %v", ErrSetupFailed, base, err)
	}
	timeout := p.Limits.SetupTimeout
	if timeout == 0 {
		timeout = profiles.DefaultSetupTimeout
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go images.WatchSetupDisk(ctx, m.eng, s.name, p, stop)
	for i, run := range p.Setup {
		what := fmt.Sprintf("setup command %d of %d", i+1, len(p.Setup))
		command := run // as written, ${NAME} unexpanded, for messages
		if i < len(p.SetupSource) {
			command = p.SetupSource[i]
		}
		b.SetStatus(what + ": " + firstLine(command))
		req := ExecRequest{Argv: []string{"sh", "-c", run}, Timeout: timeout, Grace: 2 * time.Second,
			Capture: true, OutputLimit: buildOutputLimit, Env: map[string]string{},
			Progress: func(pr Progress) {
				if pr.Line != "" {
					b.SetStatus(what + ": " + pr.Line)
				}
			}}
		if s.proxy != nil {
			req.Env = proxyEnv()
		}
		res, err := s.Exec(ctx, req)
		if cause := context.Cause(ctx); errors.Is(cause, images.ErrSetupDisk) {
			return fmt.Errorf("%w: %s (%s) was stopped: %v", ErrSetupFailed, what, command, cause)
		}
		if err != nil {
			return fmt.Errorf("%w: %s (%s) could not run: %v", ErrSetupFailed, what, command, err)
		}
		if res.ExitCode != 0 || res.TimedOut {
			status := fmt.Sprintf("exited with status %d", res.ExitCode)
			if res.TimedOut {
				status = fmt.Sprintf("was stopped at limits.setup_timeout (%s)", timeout)
			}
			return fmt.Errorf("%w: %s %s after %.1f s: %s\n%s%s", ErrSetupFailed, what, status,
				float64(res.DurationMillis)/1000, command, outputTail(res), refusals.Explain())
		}
	}
	b.SetStatus("emptying " + strings.Join(setupScratch, " and "))
	if err := m.eng.ClearDirs(ctx, s.name, setupScratch); err != nil {
		return fmt.Errorf("%w: emptying %s before saving the image: %v", ErrSetupFailed, strings.Join(setupScratch, " and "), err)
	}
	b.SetStatus("saving the image " + image)
	labels := map[string]string{LabelProfile: p.Name, LabelProfileKey: key, LabelProfileBase: baseID, LabelProfileFile: p.FileID}
	// The container's owner labels would be every session's: neutralised.
	for k := range s.labels() {
		labels[k] = ""
	}
	return m.eng.Commit(ctx, s.name, image, labels)
}

// setupProxy returns the egress proxy of a setup container: p's setup
// patterns alone, never the server's, and no one to ask; nil without any.
// Its refusals are kept in refusals, for the error of a command that fails.
func (m *Manager) setupProxy(s *Session, p *profiles.Profile, refusals *images.SetupRefusals) *egress.Session {
	if len(p.Egress.Setup) == 0 {
		return nil
	}
	policy, err := egress.ParsePolicy(p.Egress.Setup) // checked when the file was read
	if err != nil {
		m.log.Error("a profile's setup egress patterns no longer parse", "profile", p.Name, "err", err)
		return nil
	}
	return egress.NewSession(egress.Config{Policy: policy, MaxBytes: m.cfg.EgressMaxBytes, MaxConns: m.cfg.EgressMaxConns,
		Wording: images.SetupWording(p), OnRefusal: refusals.Note, Log: m.log}, s.key)
}

// lockBuild takes the lock of key's build across processes, waiting for
// another process that holds it.
func (m *Manager) lockBuild(ctx context.Context, key string) (unlock func(), err error) {
	dir := filepath.Join(m.cfg.CacheDir, "builds")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the builds directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, key+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening a build's lock: %w", err)
	}
	for {
		err := tryLock(f)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, errLocked) {
			f.Close()
			return nil, fmt.Errorf("locking a build: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// outputTail is the end of a failed command's output, for its error.
func outputTail(res ExecResult) string {
	var b strings.Builder
	for _, stream := range []struct{ name, text string }{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		text := strings.TrimRight(stream.text, "\n")
		if text == "" {
			continue
		}
		if len(text) > 4<<10 {
			text = "..." + strings.ToValidUTF8(text[len(text)-4<<10:], "")
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", stream.name, text)
	}
	if b.Len() == 0 {
		return "(no output)"
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

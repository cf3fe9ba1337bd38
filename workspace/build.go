package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// setup runs p's setup commands in a container from base and commits it
// (images.Deps.Setup): it stays the manager's, since it makes a session
// of its own and ends it. The container goes whatever happens, and no
// image is left of a failure.
func (m *Manager) setup(ctx context.Context, p *profiles.Profile, base, baseID, key, image string, b *images.Build) (err error) {
	s, refusals, end := setupSession(ctx, m, "setup-"+key[:20], p, base)
	defer end()
	b.SetStatus("starting the setup container from " + base)
	if _, err := s.Start(ctx); err != nil {
		return fmt.Errorf("%w: starting its container from %s: %v", ErrSetupFailed, base, err)
	}
	timeout := setupTimeout(p)
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

// setupSession makes the session of a profile's setup or a project's
// build, called name: a container from base, started by the caller, with
// no network device, its egress only p's setup patterns through a proxy
// of its own, whose refusals are kept for the error of what fails; end
// removes it, whatever happened.
func setupSession(ctx context.Context, m *Manager, name string, p *profiles.Profile, base string) (s *Session, refusals *images.SetupRefusals, end func()) {
	s = m.newSession("", name)
	s.profile, s.setupBase = p, base
	refusals = images.NewSetupRefusals(p)
	s.proxy = m.setupProxy(s, p, refusals)
	return s, refusals, func() {
		endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.APITimeout)
		defer cancel()
		s.end(endCtx)
	}
}

// setupTimeout bounds a profile's setup (or a project's build).
func setupTimeout(p *profiles.Profile) time.Duration {
	if p.Limits.SetupTimeout > 0 {
		return p.Limits.SetupTimeout
	}
	return profiles.DefaultSetupTimeout
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

// tryLockBusy is tryLock saying busy, rather than failing, when another
// holds the lock (images.Deps.TryLock).
func tryLockBusy(f *os.File) (busy bool, err error) {
	err = tryLock(f)
	if errors.Is(err, errLocked) {
		return true, nil
	}
	return false, err
}

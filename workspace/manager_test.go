package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

var ctx = context.Background()

func echo(t *testing.T, w *Session, argv ...string) ExecResult {
	t.Helper()
	res, err := w.Exec(ctx, ExecRequest{Argv: argv, Timeout: 10 * time.Second, Capture: true, OutputLimit: 4096})
	if err != nil {
		t.Fatalf("exec %v: %v", argv, err)
	}
	return res
}

func TestContainerIsCreatedLazilyAndOnceUnderConcurrentFirstCalls(t *testing.T) {
	m, eng, logs := newTestManager(t, nil)
	s, err := m.Session("session-1")
	if err != nil {
		t.Fatal(err)
	}
	if eng.count() != 0 {
		t.Fatal("a container was created before any call")
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { echo(t, s, "true") })
	}
	wg.Wait()
	if eng.creates != 1 {
		t.Errorf("10 concurrent first calls created %d containers, want 1", eng.creates)
	}
	if got, want := logs.events(), []string{EventCreated, EventStarted, EventReady}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestSessionsGetSeparateContainersAndFiles(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	a, _ := m.Session("a")
	b, _ := m.Session("b")
	echo(t, a, "sh", "-c", "echo secret > only-a.txt")
	res := echo(t, b, "sh", "-c", "ls")
	if res.Stdout != "" {
		t.Errorf("session b sees %q", res.Stdout)
	}
	if eng.count() != 2 || a.name == b.name {
		t.Errorf("%d containers, names %s %s; want 2 distinct", eng.count(), a.name, b.name)
	}
}

func TestEndSessionRemovesContainerAndFiles(t *testing.T) {
	m, eng, logs := newTestManager(t, nil)
	s, _ := m.Session("gone")
	echo(t, s, "sh", "-c", "echo x > f")
	m.EndSession(ctx, "gone")
	if eng.count() != 0 {
		t.Error("container left after the session ended")
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session directory still there: %v", err)
	}
	if _, err := s.Exec(ctx, ExecRequest{Argv: []string{"true"}, Timeout: time.Second, OutputLimit: 1}); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("call after end = %v, want ErrSessionEnded", err)
	}
	if !slices.Contains(logs.events(), EventRemoved) {
		t.Error("no removed event")
	}
}

func TestKeepSessionDirs(t *testing.T) {
	m, _, _ := newTestManager(t, func(c *Config) { c.KeepSessionDirs = true })
	s, _ := m.Session("kept")
	echo(t, s, "sh", "-c", "echo x > f")
	m.EndSession(ctx, "kept")
	// A kept session's own filesystem is unmounted when it ends and mounted
	// again, read-only, to be read.
	records, release, err := FindSessions(m.cfg.CacheDir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, r := range records {
		if r.Err != nil {
			t.Errorf("kept session %s: %v", r.Hash, r.Err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.workspaceDir(), "f")); err != nil {
		t.Errorf("kept session lost its file: %v", err)
	}
}

// A kept session whose disk cannot be mounted is listed with the reason,
// not left out as if it had never been.
func TestKeptDiskThatCannotBeMountedIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root; -short (make unit) leaves it out")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: sessions get their own disks only as root")
	}
	m, _, _ := newTestManager(t, func(c *Config) { c.KeepSessionDirs = true })
	s, _ := m.Session("kept")
	echo(t, s, "sh", "-c", "echo x > f")
	m.EndSession(ctx, "kept")
	if err := os.WriteFile(s.diskFile, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	records, release, err := FindSessions(m.cfg.CacheDir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if len(records) != 1 || records[0].Hash != s.key || records[0].Err == nil {
		t.Fatalf("records = %+v, want one for %s saying why it cannot be read", records, s.key)
	}
	if msg := records[0].Err.Error(); !strings.Contains(msg, "could not be mounted") || !strings.Contains(msg, s.diskFile) {
		t.Errorf("error %q does not say which image could not be mounted", msg)
	}
}

func TestIdleCleanupKeepsFilesAndNextCallRecreates(t *testing.T) {
	m, eng, logs := newTestManager(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	s, _ := m.Session("idle")
	echo(t, s, "sh", "-c", "echo kept > f")
	testwait.For(t, "idle cleanup", func() bool { return eng.count() == 0 })
	if res := echo(t, s, "cat", "f"); res.Stdout != "kept\n" {
		t.Errorf("after idle cleanup the file reads %q", res.Stdout)
	}
	if !slices.Contains(logs.events(), EventIdleCleanup) {
		t.Errorf("events %v lack %s", logs.events(), EventIdleCleanup)
	}
}

// Where the files go with the container (a Pod's emptyDir), the idle
// clean-up saves them first and the next call finds them in the next
// container, restored.
func TestIdleCleanupRestoresFilesThatGoWithTheContainer(t *testing.T) {
	m, eng, logs := newTestManager(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond; c.FilesOnEngineHost = true })
	eng.mu.Lock()
	eng.service = engine.Service{Remote: true, FilesGoWithContainer: true}
	eng.mu.Unlock()
	s, _ := m.Session("idle")
	echo(t, s, "sh", "-c", "mkdir -p d && echo kept > d/f")
	name := s.Info().Name
	testwait.For(t, "idle cleanup", func() bool { return eng.count() == 0 })
	if eng.volume(name) != "" {
		t.Fatal("the fake engine kept the files of a removed container")
	}
	if res := echo(t, s, "cat", "d/f"); res.Stdout != "kept\n" {
		t.Errorf("after idle cleanup the file reads %q", res.Stdout)
	}
	if !slices.Contains(logs.events(), "hibernate") || !slices.Contains(logs.events(), "restore_finished") {
		t.Errorf("events %v lack hibernate and restore_finished", logs.events())
	}
	// A reset while the files wait for the next container empties them.
	testwait.For(t, "idle cleanup", func() bool { return eng.count() == 0 })
	if _, err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if res := echo(t, s, "ls", "-A"); res.Stdout != "" {
		t.Errorf("after a reset of a hibernated workspace /workspace holds %q; want it empty", res.Stdout)
	}
}

func TestIdleCleanupSparesRunningCalls(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) { c.IdleTimeout = 50 * time.Millisecond })
	s, _ := m.Session("busy")
	res := echo(t, s, "sleep", "0.5")
	if res.ExitCode != 0 || eng.creates != 1 {
		t.Errorf("a running call was interrupted: exit %d, %d creates", res.ExitCode, eng.creates)
	}
}

func TestRecreatedAfterContainerDied(t *testing.T) {
	m, eng, logs := newTestManager(t, nil)
	s, _ := m.Session("dies")
	echo(t, s, "sh", "-c", "echo survives > f")
	eng.kill(s.name)
	waitChannelEnd(t, s)
	if res := echo(t, s, "cat", "f"); res.Stdout != "survives\n" {
		t.Errorf("after recreation the file reads %q", res.Stdout)
	}
	if eng.creates != 2 || !slices.Contains(logs.events(), EventRecreatedAfterFailure) {
		t.Errorf("%d creates, events %v; want a recreation", eng.creates, logs.events())
	}
}

func TestChannelReopenedWhileContainerRuns(t *testing.T) {
	m, eng, logs := newTestManager(t, nil)
	s, _ := m.Session("flaky")
	echo(t, s, "true")
	eng.breakChannels(s.name)
	waitChannelEnd(t, s)
	echo(t, s, "true")
	if eng.creates != 1 || !slices.Contains(logs.events(), EventChannelReopened) {
		t.Errorf("%d creates, events %v; want the channel reopened, no new container", eng.creates, logs.events())
	}
}

func TestResetWipesFiles(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	s, _ := m.Session("reset")
	echo(t, s, "sh", "-c", "echo x > f")
	if _, err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if eng.count() != 0 {
		t.Error("reset left the container")
	}
	if res := echo(t, s, "ls"); res.Stdout != "" {
		t.Errorf("after reset the workspace holds %q", res.Stdout)
	}
}

func TestStartFailureLeavesNoContainer(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	eng.startErr = errors.New("runtime exploded")
	s, _ := m.Session("broken")
	if _, err := s.Start(ctx); err == nil || err.Error() != "runtime exploded" {
		t.Fatalf("Start = %v", err)
	}
	if eng.count() != 0 {
		t.Error("a container that failed to start was left behind")
	}
}

func TestMissingImageIsAnError(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) { c.Image = "absent" })
	s, _ := m.Session("x")
	if _, err := s.Start(ctx); !errors.Is(err, engine.ErrImageUnavailable) {
		t.Errorf("Start = %v, want engine.ErrImageUnavailable", err)
	}
	if eng.count() != 0 {
		t.Error("container created without an image")
	}
}

// Without an image named, a session uses the locally built image when the
// service has it and the pulled default when it does not, and says which.
func TestWithoutImageTheLocalImageComesFirst(t *testing.T) {
	m, eng, logs := newTestManager(t, func(c *Config) { c.Image = "" })
	eng.mu.Lock()
	eng.images = map[string]bool{DefaultImage: true}
	eng.mu.Unlock()
	imageOf := func(name string) string {
		s, _ := m.Session(name)
		if _, err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		eng.mu.Lock()
		defer eng.mu.Unlock()
		if got := eng.containers[s.Info().Name].spec.Image; got != s.Info().Image {
			t.Errorf("container made from %s, session says %s", got, s.Info().Image)
		}
		return s.Info().Image
	}
	if got := imageOf("before"); got != DefaultImage {
		t.Errorf("without the local image: %s, want %s", got, DefaultImage)
	}
	eng.mu.Lock()
	eng.images[LocalImage] = true
	eng.mu.Unlock()
	if got := imageOf("after"); got != LocalImage {
		t.Errorf("with the local image: %s, want %s", got, LocalImage)
	}
	if n := logs.count(`"msg":"image chosen"`); n != 2 {
		t.Errorf("the choice was logged %d times, want once per change (2)", n)
	}
	eng.mu.Lock()
	eng.images = map[string]bool{}
	eng.mu.Unlock()
	s, _ := m.Session("none")
	if _, err := s.Start(ctx); !errors.Is(err, engine.ErrImageUnavailable) {
		t.Errorf("with neither image: %v, want engine.ErrImageUnavailable", err)
	}
}

func TestCloseRemovesEveryContainerAndReleasesTheInstance(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	for _, id := range []string{"a", "b", "c"} {
		s, _ := m.Session(id)
		echo(t, s, "true")
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if eng.count() != 0 {
		t.Errorf("%d containers left after Close", eng.count())
	}
	if _, err := os.Stat(m.inst.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("instance directory left: %v", err)
	}
	if _, err := m.Session("d"); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Session after Close = %v", err)
	}
}

// TestCloseWaitsForSessionsBeingEnded closes the manager while a session's
// end (an SSE stream cut by the shutdown) is still removing its container:
// Close must not return before the removal is done, or the process exits
// and leaves the container behind.
func TestCloseWaitsForSessionsBeingEnded(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	s, _ := m.Session("ending")
	echo(t, s, "true")
	eng.mu.Lock()
	eng.removeDelay = 300 * time.Millisecond
	eng.mu.Unlock()
	go m.EndSession(ctx, "ending")
	testwait.For(t, "the session to leave the map", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.sessions["ending"] == nil
	})
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if eng.count() != 0 {
		t.Errorf("Close returned with %d container(s) still being removed", eng.count())
	}
}

// waitChannelEnd waits until the session's channel has noticed it is broken.
func waitChannelEnd(t *testing.T, s *Session) {
	t.Helper()
	testwait.For(t, "channel end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-s.client.Done():
			return true
		default:
			return false
		}
	})
}

// A container whose removal fails when its session ends (a Podman service
// too busy to answer in time) is removed later, not left behind.
func TestFailedRemovalAtSessionEndIsRetried(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	s, _ := m.Session("busy")
	echo(t, s, "true")
	eng.mu.Lock()
	eng.removeFailures = 2
	eng.mu.Unlock()
	m.EndSession(ctx, "busy")
	if eng.count() != 1 {
		t.Fatal("the removal did not fail; the test proves nothing")
	}
	testwait.For(t, "the retried removal", func() bool { return eng.count() == 0 })
}

func TestCloseHurriesFailedRemovals(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	s, _ := m.Session("busy")
	echo(t, s, "true")
	eng.mu.Lock()
	eng.removeFailures = 3 // the retries would wait 1 s, then 2 s
	eng.mu.Unlock()
	m.EndSession(ctx, "busy")
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := m.Close(c); err != nil {
		t.Fatal(err)
	}
	if eng.count() != 0 {
		t.Error("Close left a container whose removal had failed at session end")
	}
}

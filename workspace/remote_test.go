package workspace

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/internal/testtree"
	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// With the files on the Podman host, a session's /workspace is a volume
// there that outlives idle cleanup and goes with the session, the agent is
// copied rather than mounted, and nothing of the session's files is on
// this machine.
func TestFilesOnEngineHostLiveInAVolume(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) {
		c.FilesOnEngineHost = true
		c.IdleTimeout = 100 * time.Millisecond
	})
	s, _ := m.Session("remote")
	if _, err := s.files.WriteFile(ctx, "a.txt", "kept"); err != nil {
		t.Fatal(err)
	}
	name := s.Info().Name
	eng.mu.Lock()
	spec := eng.containers[name].spec
	eng.mu.Unlock()
	if spec.WorkspaceVolume != name || spec.WorkspaceDir != "" || !spec.CopyAgent {
		t.Errorf("spec: volume %q, dir %q, copy agent %v; want the volume %q, no directory, the agent copied",
			spec.WorkspaceVolume, spec.WorkspaceDir, spec.CopyAgent, name)
	}
	if _, err := os.Stat(s.workspaceDir()); !os.IsNotExist(err) {
		t.Errorf("a workspace directory on this machine: %v", err)
	}
	testwait.For(t, "idle cleanup", func() bool { return eng.count() == 0 })
	if eng.volume(name) == "" {
		t.Fatal("idle cleanup removed the workspace volume")
	}
	if got, err := s.files.ReadFile(ctx, "a.txt", 0, 100); err != nil || !strings.Contains(got.Content, "kept") {
		t.Errorf("after idle cleanup a.txt reads %q, %v", got.Content, err)
	}
	m.EndSession(ctx, "remote")
	if eng.volume(name) != "" {
		t.Error("the workspace volume outlived its session")
	}
}

// A sweep removes the workspace volumes of dead instances, with or without
// their containers.
func TestSweepRemovesOrphanVolumes(t *testing.T) {
	m, eng, _ := newTestManager(t, func(c *Config) { c.FilesOnEngineHost = true })
	dead, err := newInstance(m.cfg.CacheDir, false)
	if err != nil {
		t.Fatal(err)
	}
	dead.lock.Close()
	eng.mu.Lock()
	eng.volumes["wink-orphan"] = t.TempDir()
	eng.listed = []engine.Listed{{Name: "wink-orphan", Labels: ownerLabels(dead, "0123456789abcdef")}}
	eng.mu.Unlock()
	if _, err := m.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if eng.volume("wink-orphan") != "" {
		t.Error("the orphan volume is left")
	}
}

// What needs this machine's files is refused, naming the option and why.
func TestFilesOnEngineHostRefusesWhatNeedsLocalFiles(t *testing.T) {
	for name, mutate := range map[string]func(c *Config){
		"--mount":             func(c *Config) { c.Mounts = []Mount{{HostPath: "/srv/p", Path: "p", Mode: MountOverlay}} },
		"--mount /srv/q":      func(c *Config) { c.Mounts = []Mount{{HostPath: "/srv/q", Path: "q", Mode: MountReadOnly}} },
		"--mount-roots":       func(c *Config) { c.MountRoots, c.AllowedRoots = true, []string{"/srv"} },
		"--keep-session-dirs": func(c *Config) { c.KeepSessionDirs = true },
	} {
		c := DefaultConfig()
		c.FilesOnEngineHost = true
		mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "--files-on-podman-host") {
			t.Errorf("%s with the files on the Podman host: %v", name, err)
		}
	}
}

// A reset on the Podman host empties the session's volume and gives the
// next container a fresh copy of each copy mount.
func TestResetWithTheFilesOnThePodmanHost(t *testing.T) {
	root, folder := testtree.Host(t, map[string]string{"a.txt": "one\n"})
	m, eng, _ := newTestManager(t, func(c *Config) {
		c.Mounts, c.AllowedRoots, c.FilesOnEngineHost = []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}, true
	})
	s, _ := m.Session("s")
	for path, content := range map[string]string{"scratch.txt": "x", "proj/a.txt": "edited\n"} {
		if _, err := s.files.WriteFile(ctx, path, content); err != nil {
			t.Fatal(err)
		}
	}
	name := s.Info().Name
	if _, err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if eng.volume(name) != "" {
		t.Error("the reset kept the workspace volume")
	}
	if got, err := s.files.ReadFile(ctx, "proj/a.txt", 0, 100); err != nil || !strings.Contains(got.Content, "one") {
		t.Errorf("after the reset proj/a.txt reads %q, %v; want the host's content", got.Content, err)
	}
	if _, err := s.files.ReadFile(ctx, "scratch.txt", 0, 100); err == nil {
		t.Error("scratch.txt survived the reset")
	}
	if list, err := s.folders.Changes(ctx, ""); err != nil || len(list) != 0 {
		t.Errorf("changes after the reset: %v %v", list, err)
	}
}

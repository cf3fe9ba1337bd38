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
	"github.com/wink-mcp/wink-mcp/profiles"
)

const testProfiles = `profiles:
  plain:
    description: the test image as it is
    image: test-image
    env: {PLAIN: "1"}
  built:
    description: the test image with a setup
    image: test-image
    setup: ["true"]
    env: {BUILT: "1"}
    workdir: app
    limits: {memory: 64m, cpus: 0.5, pids: 64, command_timeout: 45s}
`

// newProfileManager is a test manager with testProfiles, and mutate's changes.
func newProfileManager(t *testing.T, mutate func(*Config)) (*Manager, *fakeEngine) {
	t.Helper()
	f, err := profiles.Parse("p.yaml", []byte(testProfiles), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	m, eng, _ := newTestManager(t, func(c *Config) {
		c.Profiles = f
		if mutate != nil {
			mutate(c)
		}
	})
	return m, eng
}

func (f *fakeEngine) lastSpec(t *testing.T, name string) engine.Spec {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.specs) - 1; i >= 0; i-- {
		if f.specs[i].Name == name {
			return f.specs[i]
		}
	}
	t.Fatalf("no container %s was created", name)
	return engine.Spec{}
}

func TestProfileGivesTheContainerItsSettings(t *testing.T) {
	m, eng := newProfileManager(t, func(c *Config) {
		c.PassedEnv = map[string]string{"TOKEN": "s3cret"}
		c.GitIdentity = &GitIdentity{Name: "Ada", Email: "ada@example.org"}
	})
	s, _ := m.Session("a")
	res, err := s.profileSwitch.UseProfile(ctx, "built", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Built || res.Restarted || !strings.HasPrefix(res.Image, ProfileImageRepo+":built-") || res.Container.Workdir != "app" {
		t.Errorf("result %+v", res)
	}
	spec := eng.lastSpec(t, s.name)
	if spec.Image != res.Image || spec.MemoryBytes != 64<<20 || spec.CPUs != 0.5 || spec.PidsLimit != 64 || len(spec.Caps) != 0 || spec.User == "0:0" {
		t.Errorf("session spec %+v", spec)
	}
	for k, v := range map[string]string{"BUILT": "1", "TOKEN": "s3cret", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "Ada", "GIT_CONFIG_VALUE_1": "ada@example.org"} {
		if spec.Env[k] != v {
			t.Errorf("session env %s = %q, want %q", k, spec.Env[k], v)
		}
	}
	// The setup container ran as root with the setup capabilities, and
	// nothing of the server's environment: the image keeps its env.
	var setup engine.Spec
	for _, sp := range eng.specs {
		if strings.Contains(sp.Name, "setup-") {
			setup = sp
		}
	}
	if setup.User != "0:0" || !slices.Equal(setup.Caps, engine.SetupCaps) || setup.Image != "test-image" {
		t.Errorf("setup spec %+v", setup)
	}
	// Its /tmp and /workspace are its own, and emptied before the commit.
	if !setup.TmpOnDisk || !setup.WorkspaceInContainer || setup.WorkspaceDir != "" || setup.WorkspaceVolume != "" ||
		!slices.Equal(eng.cleared, []string{"/tmp", "/workspace"}) {
		t.Errorf("setup spec %+v, emptied %v: want /tmp and /workspace the container's own, both emptied", setup, eng.cleared)
	}
	if _, ok := setup.Env["TOKEN"]; ok || setup.Env["GIT_CONFIG_COUNT"] != "" || setup.Env["BUILT"] != "1" {
		t.Errorf("setup env %v: want the profile's alone", setup.Env)
	}
	if out := echo(t, s, "sh", "-c", "pwd"); !strings.HasSuffix(strings.TrimSpace(out.Stdout), "/app") {
		t.Errorf("a command without cwd ran in %q, want the profile's workdir", out.Stdout)
	}
	if info := s.Info(); info.Profile != "built" || info.CommandTimeout != 45*time.Second {
		t.Errorf("info %+v", info)
	}
}

func TestChangingProfileAfterUseNeedsRestart(t *testing.T) {
	m, eng := newProfileManager(t, nil)
	s, _ := m.Session("a")
	if _, err := s.Start(ctx); err != nil { // made ahead of the first call, as Prestart does
		t.Fatal(err)
	}
	res, err := s.profileSwitch.UseProfile(ctx, "plain", false, nil)
	if err != nil || res.Restarted {
		t.Fatalf("a container no call had used: %+v, %v; want switched without restart", res, err)
	}
	if _, err := s.files.WriteFile(ctx, "keep.txt", "kept"); err != nil {
		t.Fatal(err)
	}
	_, err = s.profileSwitch.UseProfile(ctx, "built", false, nil)
	if !errors.Is(err, ErrProfileInUse) || !strings.Contains(err.Error(), "restart: true") {
		t.Fatalf("err = %v, want ErrProfileInUse naming restart", err)
	}
	if eng.lastSpec(t, s.name).Env["PLAIN"] != "1" {
		t.Error("the refused change replaced the container")
	}
	res, err = s.profileSwitch.UseProfile(ctx, "built", true, nil)
	if err != nil || !res.Restarted || res.Previous != "plain" {
		t.Fatalf("restart: %+v, %v", res, err)
	}
	if got, err := s.files.ReadFile(ctx, "keep.txt", 0, 10); err != nil || !strings.Contains(got.Content, "kept") {
		t.Errorf("after the restart keep.txt = %+v, %v; the files must stay", got, err)
	}
	if _, err := s.profileSwitch.UseProfile(ctx, "nope", false, nil); err == nil || !strings.Contains(err.Error(), "built") {
		t.Errorf("unknown profile: %v, want the list of profiles", err)
	}
}

// Where the files go with the container (a Pod's emptyDir), a profile
// switch with restart saves them first and the new container has them.
func TestProfileRestartKeepsFilesThatGoWithTheContainer(t *testing.T) {
	m, eng := newProfileManager(t, func(c *Config) { c.FilesOnEngineHost = true })
	eng.mu.Lock()
	eng.service = engine.Service{Remote: true, FilesGoWithContainer: true}
	eng.mu.Unlock()
	s, _ := m.Session("a")
	if _, err := s.files.WriteFile(ctx, "keep.txt", "kept"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.profileSwitch.UseProfile(ctx, "plain", true, nil); err != nil || !res.Restarted {
		t.Fatalf("restart: %+v, %v", res, err)
	}
	if got, err := s.files.ReadFile(ctx, "keep.txt", 0, 10); err != nil || !strings.Contains(got.Content, "kept") {
		t.Errorf("after the restart keep.txt = %+v, %v; the files must come back", got, err)
	}
}

// TestConcurrentFirstSessionsBuildOnce checks that sessions asking at
// once for a profile that is not built wait for one build, and that a
// later one starts from its image.
func TestConcurrentFirstSessionsBuildOnce(t *testing.T) {
	m, eng := newProfileManager(t, nil)
	var wg sync.WaitGroup
	results := make([]ProfileChange, 5)
	errs := make([]error, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _ := m.Session(string(rune('a' + i)))
			results[i], errs[i] = s.profileSwitch.UseProfile(ctx, "built", false, nil)
		}()
	}
	wg.Wait()
	for i := range 5 {
		if errs[i] != nil || !results[i].Built || results[i].Image != results[0].Image {
			t.Errorf("session %d: %+v, %v", i, results[i], errs[i])
		}
	}
	s, _ := m.Session("f")
	res, err := s.profileSwitch.UseProfile(ctx, "built", false, nil)
	if err != nil || res.Built {
		t.Errorf("sixth session: %+v, %v; want the cached image", res, err)
	}
	if eng.commits != 1 {
		t.Errorf("%d builds, want 1", eng.commits)
	}
	// The base retagged to new content: a new key, a new build, and the
	// old image pruned.
	eng.mu.Lock()
	eng.imageVersion = map[string]int{"test-image": 1}
	eng.mu.Unlock()
	s, _ = m.Session("g")
	res2, err := s.profileSwitch.UseProfile(ctx, "built", false, nil)
	if err != nil || !res2.Built || res2.Image == res.Image {
		t.Fatalf("after the base changed: %+v, %v; want a new build", res2, err)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if eng.images[res.Image] {
		t.Errorf("the old image %s was not pruned", res.Image)
	}
}

func TestPassEnv(t *testing.T) {
	environ := []string{"NPM_TOKEN=a", "AWS_KEY=b", "AWS_REGION=c", "OTHER=d", "PATH=/x", "HOME=/h", "WINK_AUTH_TOKEN=t",
		"HTTPS_PROXY=p", "http_proxy=p", "GIT_CONFIG_COUNT=9", "XDG_RUNTIME_DIR=/r"}
	got, err := PassEnv([]string{"NPM_TOKEN", "AWS_*"}, environ)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["NPM_TOKEN"] != "a" || got["AWS_KEY"] != "b" || got["AWS_REGION"] != "c" {
		t.Errorf("passed %v", got)
	}
	all, _ := PassEnv([]string{"*"}, environ)
	for _, never := range []string{"PATH", "HOME", "WINK_AUTH_TOKEN", "HTTPS_PROXY", "http_proxy", "GIT_CONFIG_COUNT", "XDG_RUNTIME_DIR"} {
		if _, ok := all[never]; ok {
			t.Errorf("* passed %s", never)
		}
	}
	for _, bad := range []string{"", "A=B", "a b", "$(x)", strings.Repeat("A", 200)} {
		if _, err := PassEnv([]string{bad}, environ); err == nil || !strings.Contains(err.Error(), "--env-pass") {
			t.Errorf("pattern %q: err = %v", bad, err)
		}
	}
}

// TestABuildNeitherBlocksInfoNorOutlivesTheManager checks that a session
// waiting for a long setup still answers Info at once, and that closing
// the manager stops the setup and removes its container.
func TestABuildNeitherBlocksInfoNorOutlivesTheManager(t *testing.T) {
	f, err := profiles.Parse("p.yaml", []byte("profiles:\n  slow:\n    image: test-image\n    setup: [\"sleep 60\"]\n"),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	m, eng, _ := newTestManager(t, func(c *Config) { c.Profiles = f })
	s, _ := m.Session("a")
	done := make(chan error, 1)
	go func() {
		_, err := s.profileSwitch.UseProfile(ctx, "slow", false, nil)
		done <- err
	}()
	testwait.For(t, "the setup to run", func() bool {
		eng.mu.Lock()
		defer eng.mu.Unlock()
		for name, c := range eng.containers {
			if strings.Contains(name, "setup-") && c.running {
				return true
			}
		}
		return false
	})
	start := time.Now()
	s.Info()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Info waited %s for the build", d)
	}
	start = time.Now()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %s with a setup running", d)
	}
	if err := <-done; err == nil {
		t.Error("the call waiting for the stopped setup succeeded")
	}
	if n := eng.count(); n != 0 {
		t.Errorf("%d containers left after Close, want the setup's removed", n)
	}
}

// useBuilt switches a new session of m to the profile "built".
func useBuilt(t *testing.T, m *Manager, id string) ProfileChange {
	t.Helper()
	s, _ := m.Session(id)
	res, err := s.profileSwitch.UseProfile(ctx, "built", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPruneKeepsOnlyTheCurrentImages checks both prunes: a build's, of
// its own profile's older images, and images.Room.Prune, of the file's
// stale images, those that name no file and those of a file that is gone;
// neither touches an image of a profile of the same name in another file
// that still exists.
func TestPruneKeepsOnlyTheCurrentImages(t *testing.T) {
	m, eng := newProfileManager(t, nil)
	image := func(name string, labels map[string]string) {
		eng.mu.Lock()
		defer eng.mu.Unlock()
		if eng.imageLabels == nil {
			eng.imageLabels = map[string]map[string]string{}
		}
		eng.images[name], eng.imageLabels[name] = true, labels
	}
	this := m.cfg.Profiles.ID
	elsewhere := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(elsewhere, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	image("localhost/wink-profile:built-older", map[string]string{LabelProfile: "built", LabelProfileKey: "0", LabelProfileFile: this})
	image("localhost/wink-profile:built-other", map[string]string{LabelProfile: "built", LabelProfileKey: "2", LabelProfileFile: elsewhere})
	res := useBuilt(t, m, "a")
	eng.mu.Lock()
	older, other := eng.images["localhost/wink-profile:built-older"], eng.images["localhost/wink-profile:built-other"]
	eng.mu.Unlock()
	if older || !other {
		t.Errorf("after a build: its own older image left %v, another file's left %v; want only the other file's", older, other)
	}
	image("localhost/wink-profile:gone-1", map[string]string{LabelProfile: "gone", LabelProfileKey: "1", LabelProfileFile: this})
	image("localhost/wink-profile:legacy-1", map[string]string{LabelProfile: "built", LabelProfileKey: "1"})
	image("localhost/wink-profile:built-deleted", map[string]string{LabelProfile: "built", LabelProfileKey: "3", LabelProfileFile: filepath.Join(t.TempDir(), "deleted.yaml")})
	removed, kept, err := m.images.Prune(ctx)
	slices.Sort(removed)
	want := []string{"localhost/wink-profile:built-deleted", "localhost/wink-profile:gone-1", "localhost/wink-profile:legacy-1"}
	if err != nil || !slices.Equal(removed, want) {
		t.Errorf("pruned %v, %v; want the image of the profile no longer in the file, the one naming no file and the one of a deleted file", removed, err)
	}
	if len(kept) != 1 || !strings.Contains(kept[0], "built-other") || !strings.Contains(kept[0], elsewhere) {
		t.Errorf("kept %v; want the other file's image, naming its file", kept)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if !eng.images[res.Image] || !eng.images["localhost/wink-profile:built-other"] {
		t.Error("the current image, or another file's, was pruned")
	}
}

// TestAnImageBuiltFromAProfileImageIsNotTakenForIt: such an image inherits
// the profile's labels, key included, but is not the profile's image.
func TestAnImageBuiltFromAProfileImageIsNotTakenForIt(t *testing.T) {
	m, eng := newProfileManager(t, nil)
	res := useBuilt(t, m, "a")
	eng.mu.Lock()
	eng.images["localhost/someone:derived"] = true
	eng.imageLabels["localhost/someone:derived"] = eng.imageLabels[res.Image]
	delete(eng.images, res.Image)
	eng.mu.Unlock()
	s2, _ := m.Session("b")
	res2, err := s2.profileSwitch.UseProfile(ctx, "built", false, nil)
	if err != nil || !res2.Built || res2.Image != res.Image {
		t.Errorf("with only a derived image carrying the key: %+v, %v; want the profile's image built again", res2, err)
	}
}

// TestAContainerOfABuiltProfileLooksItsImageUpOnce: the lookup made
// outside the session's lock serves the container made under it.
func TestAContainerOfABuiltProfileLooksItsImageUpOnce(t *testing.T) {
	m, eng := newProfileManager(t, nil)
	useBuilt(t, m, "a")
	s, _ := m.Session("b")
	s.mu.Lock()
	s.profileSwitch.setLocked(m.cfg.Profiles.Profiles["built"])
	s.mu.Unlock()
	eng.mu.Lock()
	before := eng.imageLookups
	eng.mu.Unlock()
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if n := eng.imageLookups - before; n != 1 {
		t.Errorf("making the container looked the profile's image up %d times, want 1", n)
	}
}

// TestSessionImageNamesOneImage checks what the prompt is told of a
// session's image: the server's when it has no profile, its profile's
// tag before the build (saying it is still to be built) and after, and,
// when the answer cannot come in time, at once what this process found.
func TestSessionImageNamesOneImage(t *testing.T) {
	m, eng := newProfileManager(t, nil)
	if got := m.images.SessionImage(ctx, "plain"); got.Image != "test-image" || got.Profile != "" || got.Pending != "" {
		t.Errorf("no profile: %+v", got)
	}
	m.Register("b", SessionOptions{Profile: "built"})
	before := m.images.SessionImage(ctx, "b")
	if !strings.HasPrefix(before.Image, ProfileImageRepo+":built-") || before.Profile != "built" || !strings.Contains(before.Pending, "built from `test-image`") {
		t.Errorf("before the build: %+v", before)
	}
	built := useBuilt(t, m, "b")
	if after := m.images.SessionImage(ctx, "b"); after.Image != built.Image || after.Image != before.Image || after.Pending != "" {
		t.Errorf("after the build: %+v; want %s, built", after, built.Image)
	}
	m.Register("c", SessionOptions{Profile: "built"})
	eng.mu.Lock() // an engine that does not answer
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	busy := m.images.SessionImage(short, "c")
	eng.mu.Unlock()
	if busy.Image != built.Image || busy.Profile != "built" || busy.Pending != "" {
		t.Errorf("with no answer in time: %+v; want %s, as the build found it", busy, built.Image)
	}
}

// TestSetupMakesNoVolumeOnAPodmanHost: with the sessions' files on the
// Podman host, a setup's /workspace is still its container's own, not a
// volume of that host, unbounded by limits.setup_disk.
func TestSetupMakesNoVolumeOnAPodmanHost(t *testing.T) {
	m, eng := newProfileManager(t, func(c *Config) { c.FilesOnEngineHost = true })
	useBuilt(t, m, "a")
	eng.mu.Lock()
	defer eng.mu.Unlock()
	for _, sp := range eng.specs {
		if strings.Contains(sp.Name, "setup-") && (sp.WorkspaceVolume != "" || !sp.WorkspaceInContainer || !sp.CopyAgent) {
			t.Errorf("setup spec %+v: want its own /workspace and the agent copied", sp)
		}
	}
	for v := range eng.volumes {
		if strings.Contains(v, "setup-") {
			t.Errorf("a setup made the volume %s", v)
		}
	}
}

package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/agent"
	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// TestMain lets the test binary act as the supervisor the agent re-executes.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "supervise" {
		os.Exit(agent.SuperviseMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// fakeEngine stands in for Podman in unit tests of the manager: a
// "container" is the real agent, run in-process on the session's host
// directory, reached over an in-memory pipe.
type fakeEngine struct {
	self string

	mu         sync.Mutex
	images     map[string]bool
	containers map[string]*fakeContainer
	creates    int
	startErr   error
	listed     []engine.Listed
	// removeDelay makes Remove take this long, as Podman's does (~280 ms).
	removeDelay time.Duration
	// removeFailures makes the next Remove calls fail, as a Podman service
	// too busy to answer in time does.
	removeFailures int
	// createDelay makes Create take this long, honouring cancellation but
	// making the container all the same, as Podman may.
	createDelay time.Duration
	// recorded, when set, is what Host returns as unconfirmed facts until
	// the first SettledHost; host is what SettledHost returns.
	recorded *engine.HostFacts
	host     engine.HostFacts
	settled  bool
	// volumes are the workspace volumes made, by name: directories under
	// volumeDir, standing for the Podman host's.
	volumes   map[string]string
	volumeDir string

	imageVersion map[string]int // bumped to retag an image to new content
	imageLabels  map[string]map[string]string
	tmpClears    int
	cleared      []string // the directories ClearDirs was last asked to empty
	commits      int
	imageLookups int           // calls of Images
	specs        []engine.Spec // every container created, in order
	service      engine.Service
}

type fakeContainer struct {
	spec    engine.Spec
	running bool
	agent   *agent.Agent
	conns   []net.Conn
}

func newFakeEngine(t *testing.T) *fakeEngine {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &fakeEngine{self: self, images: map[string]bool{"test-image": true}, containers: map[string]*fakeContainer{},
		host: engine.HostFacts{Markers: changes.KernelMarkers}, volumes: map[string]string{}, volumeDir: t.TempDir()}
}

func (f *fakeEngine) EnsureImage(_ context.Context, choices []string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, image := range choices {
		if f.images[image] {
			return image, nil
		}
	}
	return "", engine.ErrImageUnavailable
}

func (f *fakeEngine) ChooseImage(ctx context.Context, choices []string) (string, bool, error) {
	image, err := f.EnsureImage(ctx, choices)
	return image, false, err
}

func (f *fakeEngine) Describe(context.Context) (engine.Description, error) {
	return engine.Description{URI: "fake://", Version: "1"}, nil
}

func (f *fakeEngine) Service() engine.Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.service
}

func (f *fakeEngine) ServiceFix() string { return "start the fake engine" }

func (f *fakeEngine) ImageID(_ context.Context, image string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[image] {
		return "", fmt.Errorf("inspecting image %s: image not known", image)
	}
	return "sha256:" + image + fmt.Sprint(f.imageVersion[image]), nil
}

func (f *fakeEngine) Commit(_ context.Context, name, image string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.containers[name]; !ok {
		return fmt.Errorf("committing %s: no such container", name)
	}
	f.images[image] = true
	if f.imageLabels == nil {
		f.imageLabels = map[string]map[string]string{}
	}
	f.imageLabels[image] = labels
	f.commits++
	return nil
}

func (f *fakeEngine) WrittenBytes(context.Context, string) (int64, error) { return 0, nil }

// ClearDirs only records: the fake's "container" is this machine, whose
// /tmp is not the setup's to empty.
func (f *fakeEngine) ClearDirs(_ context.Context, _ string, dirs []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tmpClears++
	f.cleared = dirs
	return nil
}

func (f *fakeEngine) Images(_ context.Context, label string) ([]engine.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.imageLookups++
	k, v, hasValue := strings.Cut(label, "=")
	var out []engine.Image
	for image, labels := range f.imageLabels {
		got, has := labels[k]
		if f.images[image] && has && (!hasValue || got == v) {
			out = append(out, engine.Image{ID: "sha256:" + image, Names: []string{image}, Labels: labels})
		}
	}
	return out, nil
}

func (f *fakeEngine) RemoveImage(_ context.Context, image string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, image)
	return nil
}

func (f *fakeEngine) Create(ctx context.Context, spec engine.Spec) error {
	f.mu.Lock()
	if _, ok := f.containers[spec.Name]; ok {
		f.mu.Unlock()
		return engine.ErrNameInUse
	}
	f.creates++
	if v := spec.WorkspaceVolume; v != "" && f.volumes[v] == "" {
		f.volumes[v] = filepath.Join(f.volumeDir, v)
		if err := os.Mkdir(f.volumes[v], 0o700); err != nil {
			f.mu.Unlock()
			return err
		}
	}
	f.containers[spec.Name] = &fakeContainer{spec: spec}
	f.specs = append(f.specs, spec)
	delay := f.createDelay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
	return nil
}

func (f *fakeEngine) AttachCommand(name string) string { return "fake exec -it " + name + " sh" }

func (f *fakeEngine) Start(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[name]
	if !ok {
		return errors.New("no such container")
	}
	if f.startErr != nil {
		return f.startErr
	}
	dir := c.spec.WorkspaceDir
	if v := c.spec.WorkspaceVolume; v != "" {
		dir = f.volumes[v]
	}
	if c.spec.WorkspaceInContainer {
		// The container's own /workspace: a directory no session has.
		dir = filepath.Join(f.volumeDir, "own-"+name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	a, err := agent.New(agent.Config{Workspace: dir, Self: f.self})
	if err != nil {
		return err
	}
	c.agent, c.running = a, true
	return nil
}

func (f *fakeEngine) Running(_ context.Context, name string) (bool, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[name]
	return ok, ok && c.running, nil
}

func (f *fakeEngine) Remove(_ context.Context, name string) error {
	f.mu.Lock()
	delay := f.removeDelay
	if f.removeFailures > 0 {
		f.removeFailures--
		f.mu.Unlock()
		return engine.ErrSlow
	}
	f.mu.Unlock()
	time.Sleep(delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[name]; ok {
		c.stop()
		delete(f.containers, name)
		if v := c.spec.WorkspaceVolume; f.service.FilesGoWithContainer && v != "" {
			delete(f.volumes, v) // as a Pod's emptyDir goes with it
			return os.RemoveAll(filepath.Join(f.volumeDir, v))
		}
	}
	return nil
}

func (f *fakeEngine) RemoveWorkspace(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		if c.spec.WorkspaceVolume == name {
			return errors.New("volume in use")
		}
	}
	if dir, ok := f.volumes[name]; ok {
		delete(f.volumes, name)
		return os.RemoveAll(dir)
	}
	return nil
}

func (f *fakeEngine) CopyIn(_ context.Context, name, dir string, r io.Reader) error {
	root, err := os.OpenRoot(f.containerPath(name, dir))
	if err != nil {
		return err
	}
	defer root.Close()
	return mounts.ExtractTar(r, root, 1<<30)
}

func (f *fakeEngine) CopyOut(_ context.Context, name, p string, w io.Writer) error {
	src := f.containerPath(name, p)
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	return mounts.WriteCopyTar(w, src, path.Base(p), os.Getuid(), os.Getgid())
}

// containerPath maps a path under Root in a container to its volume's directory.
func (f *fakeEngine) containerPath(name, p string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return filepath.Join(f.volumes[f.containers[name].spec.WorkspaceVolume], strings.TrimPrefix(p, Root))
}

// volume returns the directory of a workspace volume, or "" when there is none.
func (f *fakeEngine) volume(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.volumes[name]
}

func (f *fakeEngine) List(context.Context, string) ([]engine.Listed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]engine.Listed(nil), f.listed...), nil
}

// OpenTunnel is not faked: egress is tested against real Podman.
func (f *fakeEngine) OpenTunnel(context.Context, string) (io.ReadWriteCloser, error) {
	return nil, errors.New("the fake engine has no egress tunnel")
}

func (f *fakeEngine) OpenChannel(_ context.Context, name string) (io.ReadWriteCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[name]
	if !ok || !c.running {
		return nil, errors.New("container not running")
	}
	server, client := net.Pipe()
	c.conns = append(c.conns, server, client)
	go func() {
		_ = c.agent.ServeConn(context.Background(), server)
		server.Close()
	}()
	return client, nil
}

// kill makes a container die as if killed from outside.
func (f *fakeEngine) kill(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[name]; ok {
		c.stop()
	}
}

// breakChannels cuts the channels to a container that keeps running.
func (f *fakeEngine) breakChannels(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[name]; ok {
		c.closeConns()
	}
}

func (f *fakeEngine) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.containers)
}

func (c *fakeContainer) stop() {
	c.closeConns()
	if c.agent != nil {
		c.agent.Close()
	}
	c.running = false
}

func (c *fakeContainer) closeConns() {
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// logBuffer collects JSON log records for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// events returns the lifecycle events logged so far, in order.
func (l *logBuffer) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			if e, ok := rec["event"].(string); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// newTestManager returns a manager on a fake engine and its log.
func newTestManager(t *testing.T, mutate func(*Config)) (*Manager, *fakeEngine, *logBuffer) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Image = "test-image"
	cfg.CacheDir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	eng := newFakeEngine(t)
	logs := &logBuffer{}
	m, err := newManager(cfg, slog.New(slog.NewJSONHandler(logs, nil)), eng, "/fake/agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, eng, logs
}

func (f *fakeEngine) Host(ctx context.Context) (engine.HostFacts, bool, error) {
	f.mu.Lock()
	if f.recorded != nil && !f.settled {
		defer f.mu.Unlock()
		return *f.recorded, false, nil
	}
	f.mu.Unlock()
	h, err := f.SettledHost(ctx)
	return h, true, err
}

func (f *fakeEngine) SettledHost(context.Context) (engine.HostFacts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settled = true
	return f.host, nil
}

// contains reports whether any record logged so far contains s.
func (l *logBuffer) contains(s string) bool { return l.count(s) > 0 }

// count says how often s occurs in what was logged so far.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// String returns everything logged so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

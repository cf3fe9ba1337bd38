package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/enginetest"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// fakeHost is a host with set answers.
type fakeHost struct {
	podmanPath string
	layout     string
	hard       uint64
	free       uint64
	noDisk     error // what diskLimitSupport says
}

func (h fakeHost) podmanVersion(context.Context) (string, string, error) {
	if h.podmanPath == "" {
		return "", "", nil
	}
	return h.podmanPath, "podman version 4.3.1", nil
}
func (h fakeHost) cgroupLayout() string                   { return h.layout }
func (h fakeHost) hardLimits() (uint64, uint64, error)    { return h.hard, h.hard, nil }
func (h fakeHost) freeBytes(string) (uint64, error)       { return h.free, nil }
func (h fakeHost) diskLimitSupport() error                { return h.noDisk }
func (h fakeHost) criu(context.Context) string            { return "CRIU is not installed" }
func (h fakeHost) inotifyLimits() (uint64, uint64, error) { return 65536, 128, nil }

func TestRunWithoutAServiceFailsAndSkipsWhatNeedsIt(t *testing.T) {
	cfg := workspace.DefaultConfig()
	cfg.CacheDir = t.TempDir()
	eng := enginetest.Unreachable{URI: "unix://" + t.TempDir() + "/no-podman.sock"}
	cfg.Engine = eng
	self, _ := os.Executable()
	cfg.AgentBinary = self
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &doctor{cfg: cfg, log: log, svc: workspace.NewService(cfg), host: fakeHost{podmanPath: "/usr/bin/podman", layout: cgroupsUnified, hard: 1 << 20, free: 100 << 30}}
	var out bytes.Buffer
	if run(context.Background(), d, &out) {
		t.Fatalf("ready without a service:\n%s", out.String())
	}
	want := []string{
		"ok    cache dir     " + cfg.CacheDir + " is writable (100 GiB free)",
		"ok    disk limit    each session's files get an ext4 filesystem of 2048 MiB, loop-mounted from a sparse image in " + cfg.CacheDir + " (100 GiB free)",
		"ok    podman        podman version 4.3.1 (/usr/bin/podman)",
		"FAIL  service       cannot reach the test engine (tried " + eng.URI + ")\n",
		"                    fix: " + eng.ServiceFix() + "\n",
		"skip  runtime       not checked: needs the service",
		"ok    ulimits       each container gets nofile=4096 nproc=4096 explicitly, within the host's hard limits (1048576, 1048576)",
		"skip  image         not checked: needs the service",
		"skip  container     not checked: needs the service, the image, the agent binary and the mounts",
		"not ready: 1 check(s) failed (service)",
	}
	if !strings.Contains(out.String(), "agent binary") {
		t.Errorf("no agent binary line:\n%s", out.String())
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

func TestCacheDirLowOnSpaceWarns(t *testing.T) {
	d := &doctor{cfg: workspace.Config{CacheDir: t.TempDir()}, host: fakeHost{free: 200 << 20}}
	if r := d.cacheDir(context.Background()); r.Status != Warn || !strings.Contains(r.Detail, "only 200 MiB free") {
		t.Errorf("%+v", r)
	}
	d.cfg.CacheDir = "/proc/wink-cannot-exist"
	if r := d.cacheDir(context.Background()); r.Status != Fail || !strings.Contains(r.Fix, "--cache-dir") {
		t.Errorf("%+v", r)
	}
}

func TestDiskLimitCheck(t *testing.T) {
	noRoot := fmt.Errorf("%w: it loop-mounts a filesystem per session, which needs root, and this server runs as uid 1000; run it as root, or pass --disk-limit 0",
		workspace.ErrDiskLimitUnavailable)
	for _, tc := range []struct {
		name        string
		limit       int64
		host        fakeHost
		status      Status
		detail, fix string
		onHost      bool
		bounds      bool // the engine's service bounds the files
	}{
		{"off", 0, fakeHost{free: 100 << 30}, Warn, "off (--disk-limit 0): one session can fill", "--disk-limit", false, false},
		{"not root", 2 << 30, fakeHost{free: 100 << 30, noDisk: noRoot}, Warn, "which needs root, and this server runs as uid 1000; sessions will run without it", "run it as root", false, false},
		{"cache disk too small", 2 << 30, fakeHost{free: 1 << 30}, Fail, "1024 MiB free, less than one session's disk limit of 2048 MiB", "lower --disk-limit", false, false},
		{"enforced", 2 << 30, fakeHost{free: 100 << 30}, OK, "ext4 filesystem of 2048 MiB", "", false, false},
		{"files on the Podman host", 2 << 30, fakeHost{free: 100 << 30}, Warn, "a volume on the Podman host", "--disk-limit 0", true, false},
		{"files bounded by the engine", 2 << 30, fakeHost{free: 100 << 30}, OK, "bounded to 2048 MiB by the engine's service itself", "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &doctor{cfg: workspace.Config{CacheDir: "/var/cache/wink", Limits: engine.Limits{DiskBytes: tc.limit}, FilesOnEngineHost: tc.onHost,
				Engine: enginetest.Unreachable{BoundsDisk: tc.bounds}}, host: tc.host}
			r := d.diskLimit(context.Background())
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) || !strings.Contains(r.Fix, tc.fix) {
				t.Errorf("%v %q fix %q; want %v with %q, fix with %q", r.Status, r.Detail, r.Fix, tc.status, tc.detail, tc.fix)
			}
		})
	}
}

func TestPodmanMissing(t *testing.T) {
	d := &doctor{host: fakeHost{}}
	d.cfg.Engine = enginetest.Unreachable{URI: "unix:///run/podman/podman.sock"}
	if r := d.podmanCLI(context.Background()); r.Status != Fail || !strings.Contains(r.Fix, "apt-get install -y podman runc") {
		t.Errorf("local: %+v", r)
	}
	d.cfg.Engine = enginetest.Unreachable{URI: "ssh://core@builder/run/podman/podman.sock", Remote: true}
	if r := d.podmanCLI(context.Background()); r.Status != OK {
		t.Errorf("remote service: %+v", r)
	}
}

func TestRuntimeAgainstCgroups(t *testing.T) {
	for _, tc := range []struct {
		runtime, layout string
		remote          bool
		want            Status
	}{
		{"crun", cgroupsHybrid, false, Fail},
		{"runc", cgroupsHybrid, false, OK},
		{"crun", cgroupsUnified, false, OK},
		{"crun", cgroupsHybrid, true, OK}, // another host's layout is not this one's
	} {
		r := runtimeResult(tc.runtime, tc.layout, tc.remote)
		if r.Status != tc.want || (r.Status == Fail && !strings.Contains(r.Fix, `runtime = "runc"`)) {
			t.Errorf("runtimeResult(%q, %q, %v) = %+v, want %v", tc.runtime, tc.layout, tc.remote, r, tc.want)
		}
	}
}

// A service that cannot enforce the limits fails the runtime line with the
// reason and the fixes, and only warns when the configuration accepts it.
func TestRuntimeLineTellsWhatIsLimited(t *testing.T) {
	ok := Result{Status: OK, Detail: "runc; cgroups hybrid"}
	if r := limitsResult(ok, workspace.Unenforced{}, false); r.Status != OK || !strings.Contains(r.Detail, "limits enforced") {
		t.Errorf("enforced: %+v", r)
	}
	u := workspace.Unenforced{Limits: "memory, CPU, process count", Why: "rootless Podman on cgroups v1 ignores every container resource limit", Fix: "boot with the unified hierarchy"}
	r := limitsResult(ok, u, false)
	if r.Status != Fail || !strings.Contains(r.Detail, "cgroups v1") || !strings.Contains(r.Fix, "unified") || !strings.Contains(r.Fix, "--allow-unenforced-limits") {
		t.Errorf("refused: %+v", r)
	}
	r = limitsResult(ok, u, true)
	if r.Status != Warn || !strings.Contains(r.Detail, "NO MEMORY, CPU, PROCESS COUNT LIMIT") || strings.Contains(r.Fix, "--allow-unenforced-limits") {
		t.Errorf("accepted: %+v", r)
	}
}

func TestUlimitsAgainstHardLimits(t *testing.T) {
	l := engine.Limits{NofileLimit: 4096, NprocLimit: 4096}
	if r := ulimitsResult(l, 20000, ^uint64(0)); r.Status != OK || !strings.Contains(r.Detail, "(20000, unlimited)") {
		t.Errorf("%+v", r)
	}
	l.NofileLimit = 30000
	r := ulimitsResult(l, 20000, 1000)
	if r.Status != Fail || !strings.Contains(r.Detail, "--nofile 30000 is above the hard limit 20000") || !strings.Contains(r.Detail, "--nproc 4096 is above the hard limit 1000") {
		t.Errorf("%+v", r)
	}
}

func TestHardeningProblem(t *testing.T) {
	good := workspace.ExecResult{Stdout: "65534\nCapEff:\t0000000000000000\next4\nlo\n"}
	if p := hardeningProblem(good, "65534:65534", true, false); p != "" {
		t.Errorf("hardened container reported: %s", p)
	}
	unbounded := workspace.ExecResult{Stdout: "65534\nCapEff:\t0000000000000000\noverlay\nlo\n"}
	if p := hardeningProblem(unbounded, "65534:65534", false, false); p != "" {
		t.Errorf("without a disk limit, reported: %s", p)
	}
	if p := hardeningProblem(unbounded, "65534:65534", true, false); !strings.Contains(p, "/workspace is on overlay, not the session's own ext4 filesystem") {
		t.Errorf("with the disk limit expected, an overlay /workspace gave %q", p)
	}
	for _, tc := range []struct {
		r    workspace.ExecResult
		want string
	}{
		{workspace.ExecResult{Stdout: "0\nCapEff:\t0000000000000000\next4\nlo\n"}, "want uid 65534"},
		{workspace.ExecResult{Stdout: "65534\nCapEff:\t00000000a80425fb\next4\nlo\n"}, "effective capabilities 00000000a80425fb"},
		{workspace.ExecResult{Stdout: "65534\nCapEff:\t0000000000000000\next4\neth0\nlo\n"}, "network interfaces [eth0 lo]"},
		{workspace.ExecResult{ExitCode: 127, Stderr: "sh: not found"}, "exited with 127: sh: not found"},
	} {
		if p := hardeningProblem(tc.r, "65534:65534", true, false); !strings.Contains(p, tc.want) {
			t.Errorf("probe %+v: %q, want %q", tc.r, p, tc.want)
		}
	}
}

func TestContainerFix(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("%w: x", engine.ErrUnreachable):                                     "the engine's own fix",
		errors.New("crun: cgroups in hybrid mode not supported, drop all controllers"): `runtime = "runc"`,
		errors.New("setrlimit `RLIMIT_NOFILE`: Operation not permitted"):               "lower --nofile",
		errors.New("something new"):                                                    "--log-level debug",
	} {
		if fix := containerFix(err, "the engine's own fix"); !strings.Contains(fix, want) {
			t.Errorf("containerFix(%v) = %q, want %q in it", err, fix, want)
		}
	}
}

func TestSummary(t *testing.T) {
	var out bytes.Buffer
	if !summarize(&out, []Result{{Name: "a", Status: OK}, {Name: "b", Status: Warn}}) || !strings.Contains(out.String(), "ready, with 1 warning(s) (b)") {
		t.Errorf("warnings only: %s", out.String())
	}
	out.Reset()
	writeResult(&out, Result{Name: "image", Status: Fail, Detail: "missing", Fix: "build it"})
	if want := "FAIL  image         missing\n                    fix: build it\n"; out.String() != want {
		t.Errorf("line %q, want %q", out.String(), want)
	}
}

func TestMountsCheck(t *testing.T) {
	root := t.TempDir()
	folder := root + "/proj"
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*workspace.Config)
		status Status
		detail string
	}{
		{name: "none", mutate: func(*workspace.Config) {}, status: Skip, detail: "no host folder"},
		{name: "outside", mutate: func(c *workspace.Config) {
			c.Mounts, c.AllowedRoots = []workspace.Mount{{HostPath: "/etc"}}, []string{root}
		}, status: Fail, detail: "/etc is outside the allowed roots"},
		{name: "read-only", mutate: func(c *workspace.Config) {
			c.Mounts, c.AllowedRoots = []workspace.Mount{{HostPath: folder, Mode: workspace.MountReadOnly}}, []string{root}
		}, status: OK, detail: folder + " at /workspace/proj (ro); the workspace runs as 65534:65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := workspace.DefaultConfig()
			cfg.CacheDir = t.TempDir()
			tc.mutate(&cfg)
			d := &doctor{cfg: cfg}
			r := d.mounts(context.Background())
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
				t.Fatalf("%v %q, want %v with %q", r.Status, r.Detail, tc.status, tc.detail)
			}
			if d.mountsOK != (tc.status != Fail) {
				t.Errorf("mountsOK %v after %v", d.mountsOK, r.Status)
			}
		})
	}
}

// The egress line says when there is no network, and reaches each named
// host as the proxy would, refusing loopback unless its port is named.
func TestEgressCheck(t *testing.T) {
	if r := (&doctor{cfg: workspace.DefaultConfig()}).egress(context.Background()); r.Status != OK || !strings.Contains(r.Detail, "no network at all") {
		t.Errorf("without --egress: %+v", r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cfg := workspace.DefaultConfig()
	cfg.Egress = []string{"localhost:" + port, "127.0.0.1", "*.example.com"}
	r := (&doctor{cfg: cfg}).egress(context.Background())
	for _, want := range []string{"reached localhost:" + port, "wildcards not tried: *.example.com", "127.0.0.1: it resolves to 127.0.0.1, a loopback address"} {
		if !strings.Contains(r.Detail, want) {
			t.Errorf("detail lacks %q: %+v", want, r)
		}
	}
	if r.Status != Warn || !strings.Contains(r.Detail, "loopback") {
		t.Errorf("a loopback address named without its port: %+v; want a warning naming loopback", r)
	}
}

// TestWatchResult: a host whose inotify limits cannot hold one workspace's
// watch beside the share its commands may hold, or few workspaces at all,
// gets a warning that says what to raise; the detail says what the host
// allows and how many workspaces that watches in full.
func TestWatchResult(t *testing.T) {
	for _, c := range []struct {
		dirs, shares       int
		watches, instances uint64
		want               Status
		full               string
	}{
		{8192, 8, 192536, 128, OK, "at least 5 workspaces of 8192 directories"},
		{8192, 8, 8191, 128, Warn, "at least 0 workspaces"},
		{8192, 1, 16384, 128, Warn, "at least 0 workspaces"},
		{8192, 8, 1 << 20, 8, Warn, "at least 4 workspaces"},
	} {
		r := watchResult(c.dirs, c.shares, c.watches, c.instances)
		if r.Status != c.want || (c.want == Warn && !strings.Contains(r.Fix, "max_user_watches")) || !strings.Contains(r.Detail, c.full) ||
			!strings.Contains(r.Detail, fmt.Sprintf("%d inotify instances and %d watches", c.instances, c.watches)) {
			t.Errorf("watchResult(%d, %d, %d, %d) = %+v, want %v saying %q", c.dirs, c.shares, c.watches, c.instances, r, c.want, c.full)
		}
	}
}

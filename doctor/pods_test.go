package doctor

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/enginetest"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// podEngine is an engine of Pods whose API server does not answer, and
// whose network policy probe found n.
type podEngine struct {
	enginetest.Unreachable
	n engine.NetworkPolicy
}

func (p podEngine) NetworkPolicy(context.Context) (engine.NetworkPolicy, error) { return p.n, nil }

// TestDoctorOfPods runs doctor with an engine of Pods: the header names the
// Kubernetes API server, no line claims what a Pod lacks (pids and rlimits,
// no network) or speaks of a Podman host (its CRIU, its files), the
// checkpoints and processes lines say what happens to a Pod's files and
// processes, and the network line reports the policy's probe: ok when
// enforced, a warning when unenforced and allowed, a failure otherwise.
func TestDoctorOfPods(t *testing.T) {
	t.Parallel()
	policy := engine.NetworkPolicy{Name: "NetworkPolicy wink/wink-mcp-workspaces-deny-all", Target: "10.0.0.1:6443", Flag: "--allow-unenforced-network-policy"}
	enforced, allowed := policy, policy
	enforced.Enforced, allowed.Allowed = true, true
	cases := []struct {
		name string
		n    engine.NetworkPolicy
		want []string
	}{
		{"enforced", enforced, []string{"ok    egress        each Pod's eth0 is cut off by NetworkPolicy wink/wink-mcp-workspaces-deny-all (deny-all), enforced: a probe Pod under it could not reach 10.0.0.1:6443"}},
		{"unenforced, allowed", allowed, []string{"warn  egress        NOT ENFORCED (--allow-unenforced-network-policy): a probe Pod under NetworkPolicy wink/wink-mcp-workspaces-deny-all reached 10.0.0.1:6443",
			"fix: run a network plugin that enforces NetworkPolicies"}},
		{"unenforced", policy, []string{"FAIL  egress        every workspace would be refused: a probe Pod under NetworkPolicy wink/wink-mcp-workspaces-deny-all reached 10.0.0.1:6443, " +
			"so the cluster does not enforce it, or another NetworkPolicy of the namespace allows the Pods' traffic",
			"remove any policy of the namespace that allows the Pods' traffic, or pass --allow-unenforced-network-policy to accept"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := workspace.DefaultConfig()
			cfg.CacheDir = t.TempDir()
			cfg.FilesOnEngineHost = true
			cfg.Engine = podEngine{Unreachable: enginetest.Unreachable{URI: "/etc/kube.conf", Remote: true, BoundsDisk: true, Pods: true}, n: tc.n}
			cfg.AgentBinary, _ = os.Executable()
			d := &doctor{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), svc: workspace.NewService(cfg),
				host: fakeHost{podmanPath: "/usr/bin/podman", layout: cgroupsUnified, hard: 1 << 20, free: 100 << 30}}
			var out bytes.Buffer
			run(context.Background(), d, &out)
			want := append([]string{
				"wink-mcp doctor: image localhost/wink-workspace:bookworm or else docker.io/library/python:3.12-slim, Kubernetes API server of /etc/kube.conf\n",
				"ok    podman        not needed: each workspace is a Pod of the cluster",
				"ok    ulimits       not set: --nofile and --nproc are no Pod settings; a Pod's rlimits are its container runtime's defaults",
				"ok    disk limit    each session's files are bounded to 2048 MiB by the engine's service itself",
				"a Pod's /workspace goes with the Pod, so one removed for idleness or a profile restart has its files saved there and restored into the next",
				"a workspace kept by name lives in the cluster, a PersistentVolumeClaim and a Lease each (`wink-mcp workspaces --engine kubernetes`)",
				"ok    processes     running processes are not kept by checkpoints, restarts or handoffs to another process (start them again): a Pod's processes end with it",
				"a kept workspace's into " + filepath.Join(cfg.CacheDir, "checkpoints") + ", which every replica must share",
			}, tc.want...)
			for _, w := range want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, wrong := range []string{"Podman service", "Podman host", "CRIU", "no network", "nofile=4096"} {
				if strings.Contains(out.String(), wrong) {
					t.Errorf("output claims %q of a Pod:\n%s", wrong, out.String())
				}
			}
		})
	}
}

// TestDoctorCheckpointDirUnwritable: a --checkpoint-dir the server cannot
// write is a warning naming the directory and the fix.
func TestDoctorCheckpointDirUnwritable(t *testing.T) {
	t.Parallel()
	cfg := workspace.DefaultConfig()
	cfg.CacheDir = t.TempDir()
	file := filepath.Join(cfg.CacheDir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.CheckpointDir, cfg.FilesOnEngineHost = filepath.Join(file, "checkpoints"), true
	cfg.Engine = podEngine{Unreachable: enginetest.Unreachable{URI: "/etc/kube.conf", Remote: true, BoundsDisk: true, Pods: true}}
	d := &doctor{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), svc: workspace.NewService(cfg)}
	r := d.checkpoints(context.Background())
	if r.Status != Warn || !strings.Contains(r.Detail, cfg.CheckpointDir) || !strings.Contains(r.Detail, "it cannot be written") ||
		!strings.Contains(r.Fix, "--checkpoint-dir") {
		t.Errorf("checkpoints line with an unwritable --checkpoint-dir: %+v", r)
	}
}

// TestPodLines checks the runtime line of Pods and the container check's
// reading of a Pod's interfaces: eth0 besides lo is what a Pod has when
// its policy is enforced or allowed, and only then.
func TestPodLines(t *testing.T) {
	t.Parallel()
	r := podRuntime(engine.Description{DefaultRuntime: "gvisor"})
	if r.Status != OK || !strings.Contains(r.Detail, "runtime class gvisor; memory, CPU and ephemeral-storage limits") || !strings.Contains(r.Detail, "no pids limit of wink-mcp's") {
		t.Errorf("runtime line %+v", r)
	}
	pod := workspace.ExecResult{Stdout: "65534\nCapEff:\t0000000000000000\noverlay\neth0\nlo\n"}
	if p := hardeningProblem(pod, "65534:65534", false, true); p != "" {
		t.Errorf("a Pod under its policy reported: %s", p)
	}
	if p := hardeningProblem(pod, "65534:65534", false, false); !strings.Contains(p, "network interfaces [eth0 lo], want only lo") {
		t.Errorf("a Pod whose policy does not hold: %q", p)
	}
	bare := workspace.ExecResult{Stdout: "65534\nCapEff:\t0000000000000000\noverlay\nlo\neth1\n"}
	if p := hardeningProblem(bare, "65534:65534", false, true); !strings.Contains(p, "want lo and the Pod's eth0") {
		t.Errorf("a Pod with another device: %q", p)
	}
}

// permEngine is a podEngine whose API server answers about permissions.
type permEngine struct {
	podEngine
	r engine.PermissionReport
}

func (p permEngine) CheckPermissions(context.Context) (engine.PermissionReport, error) {
	return p.r, nil
}

// TestPodPermissions checks the permissions line: a failure naming the
// missing calls with the rule to add, a warning for the calls the engine
// does without, ok when all are allowed.
func TestPodPermissions(t *testing.T) {
	t.Parallel()
	fix := `add to the Role bound to wink-mcp's account in namespace wink the rules {apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["update"]}`
	for _, tc := range []struct {
		name   string
		r      engine.PermissionReport
		status Status
		want   string
	}{
		{"all", engine.PermissionReport{Checked: 15, Scope: "in namespace wink"}, OK, "all 15 calls the engine makes are allowed (SelfSubjectAccessReview), in namespace wink"},
		{"missing", engine.PermissionReport{Checked: 15, Scope: "in namespace wink", Missing: []string{"leases update"}, Fix: fix}, Fail, "missing in namespace wink: leases update"},
		{"optional", engine.PermissionReport{Checked: 15, Scope: "in namespace wink", Optional: []string{"nodes list (cluster-wide) (the first --image choice is used)"}}, Warn,
			"every call the engine needs in namespace wink is allowed; not: nodes list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := workspace.DefaultConfig()
			cfg.Engine = permEngine{podEngine: podEngine{Unreachable: enginetest.Unreachable{Pods: true}}, r: tc.r}
			d := &doctor{cfg: cfg, info: &workspace.ServiceInfo{}}
			got := d.podPermissions(context.Background())
			if got.Status != tc.status || !strings.HasPrefix(got.Detail, tc.want) || (tc.r.Fix != "" && got.Fix != tc.r.Fix) {
				t.Errorf("permissions = %+v; want %s %q", got, tc.status, tc.want)
			}
		})
	}
}

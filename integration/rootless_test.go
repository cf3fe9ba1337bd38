package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rootlessUser is the plain user `make setup` gives rootless Podman: its
// own service on /run/user/UID/podman/podman.sock and its own images.
type rootlessUser struct {
	name         string
	uid, gid     int
	home, socket string
	bin          string // a copy of winkBin the user can run
}

var rootless struct {
	once sync.Once
	user *rootlessUser
	why  string
}

// needRootless returns the rootless user, or skips the test without one
// (fails it when CI is set: a broken set-up must not pass as green).
func needRootless(t *testing.T) *rootlessUser {
	t.Helper()
	rootless.once.Do(func() { rootless.user, rootless.why = findRootless() })
	if rootless.user == nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and rootless Podman is not usable: %s; run `make setup`", rootless.why)
		}
		t.Skipf("rootless Podman is not usable (%s); run `make setup`", rootless.why)
	}
	return rootless.user
}

// removeRootlessBinary removes the copy of winkBin findRootless made, if it
// made one: 94 MB a run otherwise left in the temporary directory.
func removeRootlessBinary() {
	if rootless.user != nil {
		_ = os.RemoveAll(filepath.Dir(rootless.user.bin))
	}
}

func findRootless() (*rootlessUser, string) {
	if os.Geteuid() != 0 {
		return nil, "the tests must run as root to start a server as another user"
	}
	name := envOr("WINK_ROOTLESS_USER", "wink-rootless")
	acct, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Sprintf("no user %s: %v", name, err)
	}
	u := &rootlessUser{name: name, home: acct.HomeDir}
	u.uid, _ = strconv.Atoi(acct.Uid)
	u.gid, _ = strconv.Atoi(acct.Gid)
	u.socket = fmt.Sprintf("/run/user/%d/podman/podman.sock", u.uid)
	if err := ping(u.socket); err != nil {
		return nil, fmt.Sprintf("%s's Podman service does not answer on %s: %v", name, u.socket, err)
	}
	for _, img := range []string{testImage, pythonImage} {
		if out, err := u.podman("image", "exists", img); err != nil {
			return nil, fmt.Sprintf("%s's storage lacks %s: %v %s", name, img, err, out)
		}
	}
	dir, err := os.MkdirTemp("", "wink-rootless-bin-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		u.bin = filepath.Join(dir, "wink-mcp")
		err = copyFile(winkBin, u.bin, 0o755)
	}
	if err != nil {
		return nil, fmt.Sprintf("copying the binary where %s can run it: %v", name, err)
	}
	return u, ""
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// apply makes cmd run as the user, in its own environment with extra
// ("NAME=value") added.
func (u *rootlessUser) apply(cmd *exec.Cmd, extra ...string) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	cmd.Env = append([]string{"HOME=" + u.home, "USER=" + u.name, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		fmt.Sprintf("XDG_RUNTIME_DIR=/run/user/%d", u.uid)}, extra...)
	cmd.Dir = "/"
}

// dir makes a directory the user owns, removed after the test.
func (u *rootlessUser) dir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wink-rootless-")
	if err == nil {
		err = os.Chown(dir, u.uid, u.gid)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// podman runs the podman CLI against the user's service.
func (u *rootlessUser) podman(args ...string) (string, error) {
	out, err := exec.Command("podman", append([]string{"--url", "unix://" + u.socket}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (u *rootlessUser) containersNamed(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := u.podman("ps", "-a", "--filter", "name=^"+prefix+"-", "--format", "{{.Names}}")
	if err != nil {
		t.Fatalf("podman ps: %v: %s", err, out)
	}
	return strings.Fields(out)
}

func (u *rootlessUser) removeContainers(t *testing.T, prefix string) {
	for _, name := range u.containersNamed(t, prefix) {
		_, _ = u.podman("rm", "-f", "-t", "0", name)
	}
}

// rootlessArgs are what a rootless user on this machine's cgroups v1 must
// pass: the opt-in to run without the limits it cannot enforce, and no
// disk limit (it needs root). Pools are off so that containers can be
// counted by prefix.
var rootlessArgs = []string{"--allow-unenforced-limits", "--disk-limit", "0", "--warm", "0"}

// A plain user with rootless Podman on cgroups v1 gets every tool, on
// every transport, in a container hardened in everything but the limits
// the host cannot enforce, which the log, the prompt and the container say.
// Ending the session leaves no container and no file behind, with
// CONTAINER_HOST and CONTAINER_CONNECTION in the server's environment.
func TestRootless(t *testing.T) {
	u := needRootless(t)
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, as: u, env: u.shellEnv(t), args: rootlessArgs})
		fileToolsScenario(t, p)
		name := p.container()
		checkRootlessHardening(t, u, name)
		if res := p.run("id", "-u"); strings.TrimSpace(res.Stdout) != "65534" {
			t.Errorf("the container runs as uid %q, want 65534", res.Stdout)
		}
		if p.logs.find("RESOURCE LIMITS ARE NOT ENFORCED: --allow-unenforced-limits runs containers without a memory, CPU, process count limit", nil) == nil {
			t.Error("the start does not warn that the limits are off")
		}
		if p.logs.find("workspace created", map[string]any{"unenforced_limits": "memory, CPU, process count"}) == nil {
			t.Error("the created event does not name the unenforced limits")
		}
		if text := p.promptText(); !strings.Contains(text, "| limits not enforced | memory, CPU, process count |") {
			t.Errorf("the prompt does not say the limits are off:\n%s", text)
		}
		// Files the container user (a subordinate uid on the host) leaves
		// in a directory only it may write: the server must still remove them.
		p.run("sh", "-c", "mkdir -p left/deep && echo x > left/deep/f && chmod 500 left/deep left")
		dir := p.sessionDir()
		p.endSession()
		if tr != "stdio" {
			waitUntil(t, 20*time.Second, "the session's container to go", func() bool { return len(u.containersNamed(t, p.prefix)) == 0 })
			waitUntil(t, 20*time.Second, "the session's directory to go", func() bool { return !fileExists(dir) })
		}
		if left := u.containersNamed(t, p.prefix); len(left) > 0 {
			t.Errorf("containers left: %v", left)
		}
		if fileExists(dir) {
			t.Errorf("session directory %s left", dir)
		}
		if left := u.notTheUsers(p.cache); len(left) > 0 {
			t.Errorf("files of the container's users are left in the cache: %v", left)
		}
	})
}

// checkRootlessHardening inspects a rootless container: everything the
// rootful check asks but the cgroup limits.
func checkRootlessHardening(t *testing.T, u *rootlessUser, name string) {
	t.Helper()
	out, err := u.podman("inspect", name)
	if err != nil {
		t.Fatalf("podman inspect: %v %s", err, out)
	}
	var all []inspected
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 1 {
		t.Fatalf("inspect output: %v", err)
	}
	c, hc := all[0], all[0].HostConfig
	if hc.NetworkMode != "none" || len(hc.CapAdd) != 0 || !strings.Contains(strings.Join(hc.CapDrop, ","), "CAP_SETUID") ||
		!strings.Contains(strings.Join(hc.SecurityOpt, ","), "no-new-privileges") || hc.Privileged || c.Config.User != "65534:65534" {
		t.Errorf("hardening: network %q, cap add %v drop %v, security %v, privileged %v, user %q",
			hc.NetworkMode, hc.CapAdd, hc.CapDrop, hc.SecurityOpt, hc.Privileged, c.Config.User)
	}
	if _, ok := hc.Tmpfs["/tmp"]; !ok {
		t.Errorf("no tmpfs at /tmp: %v", hc.Tmpfs)
	}
	rlimits := map[string]uint64{}
	for _, r := range hc.Ulimits {
		rlimits[r.Name] = r.Hard
	}
	if rlimits["RLIMIT_NOFILE"] != 4096 || rlimits["RLIMIT_NPROC"] != 4096 {
		t.Errorf("rlimits %v, want nofile and nproc 4096", hc.Ulimits)
	}
}

// Without the opt-in, a rootless server on cgroups v1 refuses to make
// containers, and the first call says why and what to do.
func TestRootlessWithoutTheOptInIsRefusedClearly(t *testing.T) {
	u := needRootless(t)
	p := start(t, startOptions{as: u, args: []string{"--disk-limit", "0"}})
	msg := p.toolErr("podman_shell", map[string]any{"command": []string{"true"}})
	for _, want := range []string{"cannot enforce the container limits", "cgroups v1", "--allow-unenforced-limits", "rootful"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q lacks %q", msg, want)
		}
	}
	if left := u.containersNamed(t, p.prefix); len(left) > 0 {
		t.Errorf("containers made though refused: %v", left)
	}
}

// forkBomb forks up to 400 sleeping children and prints how many it made.
const forkBomb = `import os, signal, time
children = []
for _ in range(400):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children.append(pid)
print(len(children))
for pid in children:
    os.kill(pid, signal.SIGKILL)
`

// What a fork bomb can do without a pids limit: RLIMIT_NPROC, which counts
// the processes of the container user's host uid, still bounds it.
func TestRootlessForkBombIsBoundedByNproc(t *testing.T) {
	u := needRootless(t)
	p := start(t, startOptions{as: u, image: pythonImage, args: append([]string{"--nproc", "128", "--pids-limit", "128"}, rootlessArgs...)})
	res := p.shell(map[string]any{"command": []string{"python3", "-c", forkBomb}, "timeout_seconds": 60})
	forked, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if err != nil || forked == 0 || forked >= 128 {
		t.Errorf("a fork bomb under --nproc 128 made %q children (stderr %q); want fewer than 128", res.Stdout, res.Stderr)
	}
}

// shellEnv is what a rootless user's shell exports for Podman, as its
// documentation suggests: the socket as CONTAINER_HOST, a named
// connection as CONTAINER_CONNECTION (in the user's own connections
// file, made in a folder of the test). The server is run with it.
func (u *rootlessUser) shellEnv(t *testing.T) []string {
	t.Helper()
	config := u.dir(t)
	conns := fmt.Sprintf(`{"Connection":{"Default":"mine","Connections":{"mine":{"URI":"unix://%s"}}}}`, u.socket)
	must(t, os.MkdirAll(filepath.Join(config, "containers"), 0o755))
	must(t, os.WriteFile(filepath.Join(config, "containers", "podman-connections.json"), []byte(conns), 0o644))
	return []string{"CONTAINER_HOST=unix://" + u.socket, "CONTAINER_CONNECTION=mine", "XDG_CONFIG_HOME=" + config}
}

// notTheUsers lists what under root belongs to another uid than the
// user's own (the container's users are subordinate uids on the host).
func (u *rootlessUser) notTheUsers(root string) []string {
	var left []string
	_ = filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err == nil {
			if st := info.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid {
				left = append(left, fmt.Sprintf("%s (uid %d, %v)", path, st.Uid, info.Mode()))
			}
		}
		return nil
	})
	return left
}

// A rootless session with an overlay and a copy mount of the user's own
// folders, served by a server whose environment has CONTAINER_HOST and
// CONTAINER_CONNECTION set: edits reach the patch, the host folders stay
// as they were, and ending the session removes its directory completely,
// including the overlay's work directory, which belongs to a subordinate
// uid and, once a directory of the host folder is replaced, holds a
// whiteout of that uid; nothing in the cache belongs to another uid than
// the user's.
func TestRootlessMountsExportAndCleanup(t *testing.T) {
	u := needRootless(t)
	home := u.dir(t)
	for _, d := range []string{"proj", "data"} {
		folder := filepath.Join(home, d)
		must(t, os.Mkdir(folder, 0o755))
		must(t, os.WriteFile(filepath.Join(folder, "a.txt"), []byte("one\n"), 0o644))
		must(t, os.Chown(folder, u.uid, u.gid))
		must(t, os.Chown(filepath.Join(folder, "a.txt"), u.uid, u.gid))
		must(t, os.MkdirAll(filepath.Join(folder, "old", "sub"), 0o755))
		must(t, os.WriteFile(filepath.Join(folder, "old", "sub", "f"), []byte("f\n"), 0o644))
		for _, p := range []string{"old", "old/sub", "old/sub/f"} {
			must(t, os.Chown(filepath.Join(folder, p), u.uid, u.gid))
		}
	}
	p := start(t, startOptions{as: u, env: u.shellEnv(t), args: append([]string{"--allowed-root", home,
		"--mount", filepath.Join(home, "proj") + ":proj:overlay", "--mount", filepath.Join(home, "data") + ":data:copy"}, rootlessArgs...)})
	p.run("sh", "-c", "echo two >> proj/a.txt && echo new > proj/b.txt && echo two >> data/a.txt && mkdir -p proj/deep/er && echo x > proj/deep/er/c && rm -rf proj/old && mkdir proj/old2 && mv proj/old2 proj/old")
	cli := exec.Command(u.bin, "export", "--cache-dir", p.cache, "--out", filepath.Join(p.cache, "patches"))
	u.apply(cli)
	out, err := cli.CombinedOutput()
	if err != nil {
		t.Fatalf("wink-mcp export as %s: %v\n%s", u.name, err, out)
	}
	patch, err := os.ReadFile(filepath.Join(p.cache, "patches", "proj.patch"))
	must(t, err)
	for _, want := range []string{"+two", "b.txt", "deep/er/c"} {
		if !strings.Contains(string(patch), want) {
			t.Errorf("the overlay's patch lacks %q:\n%s", want, patch)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, "proj", "a.txt")); string(b) != "one\n" {
		t.Errorf("the host folder changed: %q", b)
	}
	dir := p.sessionDir()
	p.endSession()
	if fileExists(dir) {
		t.Errorf("the session directory is left, holding files of the container's users: %v", u.notTheUsers(dir))
	}
	if left := u.notTheUsers(p.cache); len(left) > 0 {
		t.Errorf("files of the container's users are left in the cache: %v", left)
	}
	if p.logs.find("shutdown incomplete", nil) != nil {
		t.Error("the server reported an incomplete shutdown")
	}
}

package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sshHost is an sshd of the test's on a loopback port, with a host key of
// its own and a bare git repository holding one file. It runs as the
// rootless test user (sshd without root logs in only its own user).
type sshHost struct {
	dir, port, user, token string
	log                    *lockedBuffer
}

// lockedBuffer is sshd's log, written by the process and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func runOK(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startSSHHost starts an sshd that lets in authorizedKey and serves
// repo.git, whose README holds the host's token.
func startSSHHost(t *testing.T, u *rootlessUser, authorizedKey string) *sshHost {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Fatalf("no sshd (openssh-server): run `make setup`: %v", err)
	}
	dir, err := os.MkdirTemp("", "wink-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	h := &sshHost{dir: dir, port: port, user: u.name, token: "ssh-clone-" + hex.EncodeToString(token), log: &lockedBuffer{}}
	runOK(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "wink-test-host", "-f", filepath.Join(dir, "host_key"))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(authorizedKey), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf("ListenAddress 127.0.0.1:%s\nHostKey %s/host_key\nAuthorizedKeysFile %s/authorized_keys\n"+
		"PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\nLogLevel VERBOSE\n", port, dir, dir)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	runOK(t, "git", "init", "-q", "-b", "main", work)
	if err := os.WriteFile(filepath.Join(work, "README"), []byte(h.token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runOK(t, "git", "-C", work, "add", "README")
	runOK(t, "git", "-C", work, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "first")
	runOK(t, "git", "clone", "-q", "--bare", work, filepath.Join(dir, "repo.git"))
	runOK(t, "chown", "-R", fmt.Sprintf("%d:%d", u.uid, u.gid), dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	cmd.Env = []string{"HOME=" + u.home, "PATH=/usr/bin:/bin"}
	cmd.Stderr = h.log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(h.log.String(), "Server listening"); {
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen:\n%s", h.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return h
}

// knownHostsLine is the known_hosts line of h's host key.
func (h *sshHost) knownHostsLine(t *testing.T) string {
	pub, err := os.ReadFile(filepath.Join(h.dir, "host_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	return fmt.Sprintf("[127.0.0.1]:%s %s %s\n", h.port, f[0], f[1])
}

// testSSHAgent is an ssh-agent of the test's, holding a throwaway key.
type testSSHAgent struct {
	socket, pub, keyLine string // keyLine: a line of the private key's PEM body
}

func startTestSSHAgent(t *testing.T, owner *rootlessUser) *testSSHAgent {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("ssh-agent", "-D", "-a", filepath.Join(dir, "agent.sock"))
	if owner != nil { // ssh-agent serves only its own user (and root)
		dir = owner.dir(t)
		cmd = exec.Command("ssh-agent", "-D", "-a", filepath.Join(dir, "agent.sock"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(owner.uid), Gid: uint32(owner.gid)}}
	}
	a := &testSSHAgent{socket: filepath.Join(dir, "agent.sock")}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	key := filepath.Join(dir, "id_ed25519")
	runOK(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "wink-test-user", "-f", key)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		add := exec.Command("ssh-add", "-q", key)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+a.socket)
		if out, err := add.CombinedOutput(); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("ssh-add: %v\n%s", err, out)
		}
	}
	pem, _ := os.ReadFile(key)
	a.keyLine = strings.Split(string(pem), "\n")[2] // the body's second line: key material
	pub, _ := os.ReadFile(key + ".pub")
	a.pub = string(pub)
	return a
}

// keys lists the keys the agent holds, as ssh-add -l does.
func (a *testSSHAgent) keys(t *testing.T) string {
	cmd := exec.Command("ssh-add", "-l")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+a.socket)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// sshProfiles writes a profiles file whose "ssh" profile adds Debian's
// openssh-client to the workspace image. Its path is the same every run,
// so the image (a profile's image key names its file) is built once per
// machine.
func sshProfiles(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "wink-test-ssh-profile")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "profiles.yaml")
	body := fmt.Sprintf(`profiles:
  ssh:
    image: %s
    egress:
      setup: ["${APT_MIRROR_HOST}"]
    setup:
      - apt-get update && apt-get install -y --no-install-recommends openssh-client && rm -rf /var/lib/apt/lists/*
`, pythonImage)
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// git clone git@host-style over ssh works in a session with --ssh-agent,
// through the proxy, with the key only in the server's agent; the model
// cannot read, add, remove or lock keys, nor get a signature for a host the
// known_hosts does not vouch for even with host key checking off; a
// session without --ssh-agent has no socket and no variable.
func TestSSHAgentGitClone(t *testing.T) {
	u := needRootless(t)
	agent := startTestSSHAgent(t, nil)
	good := startSSHHost(t, u, agent.pub)
	rogue := startSSHHost(t, u, agent.pub) // its host key is in no known_hosts
	known := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(known, []byte(good.knownHostsLine(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	mirror := aptMirrorHost(t)
	p := start(t, startOptions{image: pythonImage, env: []string{"SSH_AUTH_SOCK=" + agent.socket, "APT_MIRROR_HOST=" + mirror},
		args: []string{"--warm", "0", "--profiles", sshProfiles(t), "--profile", "ssh", "--ssh-agent", "--ssh-known-hosts", known,
			"--egress", "127.0.0.1:" + good.port, "--egress", "127.0.0.1:" + rogue.port}})

	url := fmt.Sprintf("ssh://%s@127.0.0.1:%s%s/repo.git", good.user, good.port, good.dir)
	clone := p.shell(map[string]any{"command": []string{"git", "clone", "-q", url, "clone"}, "timeout_seconds": 60})
	direct := exec.Command("git", "clone", "-q", url, filepath.Join(t.TempDir(), "clone"))
	direct.Env = append(os.Environ(), "SSH_AUTH_SOCK="+agent.socket, "GIT_SSH_COMMAND=ssh -o UserKnownHostsFile="+known+" -o StrictHostKeyChecking=yes")
	begin := time.Now()
	if out, err := direct.CombinedOutput(); err != nil {
		t.Fatalf("the same clone on this machine: %v\n%s", err, out)
	}
	// Not asserted: what an ssh connection costs through the agent and the proxy.
	t.Logf("git clone over ssh: %d ms in the session (the command's own time), %d ms on this machine", clone.DurationMS, time.Since(begin).Milliseconds())
	if clone.ExitCode != 0 {
		t.Fatalf("git clone over ssh: exit %d\n%s\nsshd: %s", clone.ExitCode, clone.Stderr, good.log.String())
	}
	if got := p.run("cat", "clone/README"); strings.TrimSpace(got.Stdout) != good.token {
		t.Fatalf("the clone's README: %q, want %q", got.Stdout, good.token)
	}
	if !strings.Contains(good.log.String(), "Accepted publickey for "+good.user) {
		t.Fatalf("sshd did not log the key's log-in:\n%s", good.log.String())
	}

	// Each attack below is counted for the reliability figures.
	tried, broken := 0, 0
	attack := func(what string, held bool, detail string) {
		t.Helper()
		tried++
		if !held {
			broken++
			t.Errorf("%s: %s", what, detail)
		}
	}
	// The model turns host key checking off to reach a host whose key the
	// known_hosts does not name: the connection goes through (the egress
	// allows it) but the agent refuses the binding, so no signature is made
	// and sshd never accepts the key.
	rogueURL := fmt.Sprintf("ssh://%s@127.0.0.1:%s%s/repo.git", rogue.user, rogue.port, rogue.dir)
	stolen := p.shell(map[string]any{"command": []string{"git", "clone", "-q", rogueURL, "rogue"}, "timeout_seconds": 60,
		"env": map[string]any{"GIT_SSH_COMMAND": "ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"}})
	attack("a host the known_hosts does not vouch for, host key checking off", stolen.ExitCode != 0 && !strings.Contains(rogue.log.String(), "Accepted publickey"),
		fmt.Sprintf("a log-in: exit %d\n%s\nsshd: %s", stolen.ExitCode, stolen.Stderr, rogue.log.String()))
	if !strings.Contains(rogue.log.String(), "Connection from 127.0.0.1") {
		t.Fatalf("the rogue connection did not reach sshd (the test would prove nothing):\n%s", rogue.log.String())
	}
	p.waitLog(10*time.Second, "ssh-agent request refused", nil)
	// Strict host key checking stays on by default: the same clone without
	// the model's options fails before any log-in.
	strict := p.run("git", "clone", "-q", rogueURL, "rogue2")
	attack("a clone from an unknown host key", strict.ExitCode != 0 && strings.Contains(strict.Stderr, "Host key verification failed"),
		fmt.Sprintf("exit %d %q", strict.ExitCode, strict.Stderr))

	// The container may list the key, but not add, remove or lock any.
	probe := p.run("sh", "-c", `ssh-add -l; echo "list=$?"
ssh-keygen -q -t ed25519 -N "" -f /tmp/k >/dev/null; ssh-add /tmp/k 2>/dev/null; echo "add=$?"
ssh-add -D 2>/dev/null; echo "removeall=$?"
ssh-add -d /tmp/k.pub 2>/dev/null; echo "remove=$?"
python3 -c 'import os, socket, struct
s = socket.socket(socket.AF_UNIX); s.connect(os.environ["SSH_AUTH_SOCK"])
for name, kind in (("lock", 22), ("unlock", 23)):
    msg = bytes([kind]) + struct.pack(">I", 4) + b"pass"
    s.sendall(struct.pack(">I", len(msg)) + msg)
    r = b""
    while len(r) < 5:
        r += s.recv(5 - len(r))
    print("%s=%d" % (name, r[4]))' 
echo "sock=$SSH_AUTH_SOCK"`)
	for _, want := range []string{"wink-test-user (ED25519)", "list=0", "sock=/tmp/.wink-ssh/agent.sock"} {
		if !strings.Contains(probe.Stdout, want) {
			t.Errorf("the agent probe lacks %q:\n%s%s", want, probe.Stdout, probe.Stderr)
		}
	}
	for _, want := range []string{"add=1", "removeall=1", "remove=1", "lock=5", "unlock=5"} {
		attack("the agent refuses "+want, strings.Contains(probe.Stdout, want), probe.Stdout+probe.Stderr)
	}
	if keys := agent.keys(t); strings.Count(keys, "\n") != 1 || !strings.Contains(keys, "wink-test-user") {
		t.Errorf("the server's agent after the probe: %q", keys)
	}

	// The private key nowhere in the container: files, every process's
	// environment and command line (the searcher gets it reversed).
	found := searchContainer(t, p, "/tmp/.wink-ssh/agent.sock", agent.keyLine)
	attack("the private key, searched for in every file and process of the container", strings.TrimSpace(found) == "control: True found: []", found)

	// The ssh files are read-only mounts, checked like every other.
	mounts := p.run("sh", "-c", "grep -E ' /etc/(wink-mcp/ssh_known_hosts|ssh/ssh_config.d/wink-mcp.conf) ' /proc/self/mountinfo | awk '{print $5, $6}'; "+
		"echo x >> /etc/wink-mcp/ssh_known_hosts; echo \"write=$?\"")
	attack("a write to the known_hosts", strings.Count(mounts.Stdout, " ro,") == 2 && strings.Contains(mounts.Stdout, "write=") && !strings.Contains(mounts.Stdout, "write=0"),
		fmt.Sprintf("the ssh files' mounts: %q %q", mounts.Stdout, mounts.Stderr))

	// Without --ssh-agent nothing changes: no variable, no socket, no
	// ssh_config, and the proxy refuses the agent's address.
	plain := start(t, startOptions{image: pythonImage, args: []string{"--warm", "0", "--egress", "127.0.0.1:" + good.port}})
	none := plain.run("sh", "-c", `echo "sock=${SSH_AUTH_SOCK:-none}"`)
	if !strings.Contains(none.Stdout, "sock=none") {
		t.Errorf("without --ssh-agent: %q", none.Stdout)
	}
	out := rawProxy(t, plain, "CONNECT ssh-agent.wink-mcp.invalid:22 HTTP/1.1\r\nHost: ssh-agent.wink-mcp.invalid:22\r\n\r\n")
	attack("the agent's address from a server without --ssh-agent", strings.Contains(out, "403") && strings.Contains(out, "--ssh-agent"), out)
	if ls := plain.run("sh", "-c", "ls -d /tmp/.wink-ssh /etc/ssh/ssh_config.d/wink-mcp.conf /etc/wink-mcp/ssh_known_hosts 2>/dev/null | wc -l"); strings.TrimSpace(ls.Stdout) != "0" {
		t.Errorf("without --ssh-agent the container has ssh files: %q", ls.Stdout)
	}
	recordPromise(promiseFigure{Class: "ssh-agent: from a real container, a host the known_hosts does not vouch for (host key checking off, then on), adding, removing (one, all), locking and unlocking keys, the private key searched for in every file and process, a write to the known_hosts, and the agent's address from a server without --ssh-agent",
		Tried: tried, Broken: broken,
		Measured: fmt.Sprintf("%d of %d attempts got a signature, changed the agent, found the key or wrote the ssh files", broken, tried)})
}

// A rootless Podman's session clones over ssh through its server's agent
// too (the server, its agent and the sshd all the rootless user's).
func TestRootlessSSHAgentGitClone(t *testing.T) {
	u := needRootless(t)
	agent := startTestSSHAgent(t, u)
	host := startSSHHost(t, u, agent.pub)
	known := filepath.Join(u.dir(t), "known_hosts")
	must(t, os.WriteFile(known, []byte(host.knownHostsLine(t)), 0o644))
	p := start(t, startOptions{as: u, image: pythonImage,
		env: append(u.shellEnv(t), "SSH_AUTH_SOCK="+agent.socket, "APT_MIRROR_HOST="+aptMirrorHost(t)),
		args: append([]string{"--profiles", sshProfiles(t), "--profile", "ssh", "--ssh-agent", "--ssh-known-hosts", known,
			"--egress", "127.0.0.1:" + host.port}, rootlessArgs...)})
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%s%s/repo.git", host.user, host.port, host.dir)
	if clone := p.shell(map[string]any{"command": []string{"git", "clone", "-q", url, "clone"}, "timeout_seconds": 60}); clone.ExitCode != 0 {
		t.Fatalf("git clone over ssh: exit %d\n%s\nsshd: %s", clone.ExitCode, clone.Stderr, host.log.String())
	}
	if got := p.run("cat", "clone/README"); strings.TrimSpace(got.Stdout) != host.token {
		t.Fatalf("the clone's README: %q, want %q", got.Stdout, host.token)
	}
}

// sshSocketProbe runs in the workspace: it asks the agent at
// SSH_AUTH_SOCK for its keys (SSH_AGENTC_REQUEST_IDENTITIES), leaves a
// marker named by its argument beside the socket, and lists every marker
// and agent socket the container can find.
const sshSocketProbe = `import os, socket, struct, subprocess, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(os.environ["SSH_AUTH_SOCK"])
s.sendall(struct.pack(">IB", 1, 11))
head = b""
while len(head) < 9:
    head += s.recv(9 - len(head))
print("answer", head[4], "keys", struct.unpack(">I", head[5:9])[0])
open(os.path.join(os.path.dirname(os.environ["SSH_AUTH_SOCK"]), "marker-" + sys.argv[1]), "w").close()
found = subprocess.run(["sh", "-c", "find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o \\( -name 'marker-*' -o -name agent.sock \\) -print 2>/dev/null | sort"], capture_output=True, text=True).stdout
print("found", " ".join(found.split()))
`

// Each session's container has its own ssh-agent socket: a second
// container (another session of the same server, with the same
// --ssh-agent) finds only its own, and nothing the first left beside it.
func TestSSHAgentSocketIsEachContainersOwn(t *testing.T) {
	agent := startTestSSHAgent(t, nil)
	known := filepath.Join(t.TempDir(), "known_hosts")
	must(t, os.WriteFile(known, []byte("localhost "+strings.TrimSpace(agent.pub)+"\n"), 0o644))
	port := httpServerOnLoopback(t, "reached")
	p := start(t, startOptions{transport: "http", image: pythonImage, env: []string{"SSH_AUTH_SOCK=" + agent.socket},
		args: []string{"--warm", "0", "--ssh-agent", "--ssh-known-hosts", known, "--egress", "localhost:" + port}})
	q := p.sibling(nil, "")
	probe := func(s *proc, name string) string {
		out := s.shell(map[string]any{"command": []string{"python3", "-c", sshSocketProbe, name}, "timeout_seconds": 60})
		if out.ExitCode != 0 {
			t.Fatalf("the probe in %s: exit %d\n%s%s", name, out.ExitCode, out.Stdout, out.Stderr)
		}
		return out.Stdout
	}
	first := probe(p, "first")
	second := probe(q, "second")
	for name, out := range map[string]string{"first": first, "second": second} {
		want := "answer 12 keys 1\nfound /tmp/.wink-ssh/agent.sock /tmp/.wink-ssh/marker-" + name + "\n"
		if out != want {
			t.Errorf("the %s container: %q, want %q", name, out, want)
		}
	}
	if p.container() == q.container() {
		t.Fatal("the two sessions share a container")
	}
}

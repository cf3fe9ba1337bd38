package integration

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// socketProbe runs in the workspace: it lists the tunnel's directory,
// tries to plant a file and to replace the socket (both must fail: the
// mount is read-only), connects to the socket with a wrong nonce and with
// junk, and prints the socket's inode.
const socketProbe = `import os, socket, stat
d = "/run/wink-tunnel"
print("entries", sorted(os.listdir(d)))
for what, act in (("plant", lambda: open(d + "/x.sock", "w")), ("unlink", lambda: os.unlink(d + "/tunnel.sock")),
                  ("rename", lambda: os.rename(d + "/tunnel.sock", d + "/y"))):
    try:
        act()
        print(what, "succeeded")
    except OSError as e:
        print(what, "failed", e.errno)
for greeting in (b"wink-tunnel 00000000000000000000000000000000\n", b"\x00" * 4096):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(d + "/tunnel.sock")
    s.sendall(greeting)
    s.close()
streams = [e for e in os.listdir(d) if e.startswith("streams-")]
print("streams sockets", len(streams))
for greeting in (b"wink-stream 00000000000000000000000000000000\n", b"wink-tunnel 00000000000000000000000000000000\n", b"\x00" * 4096):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(d + "/" + streams[0])
    s.sendall(greeting + b"GET http://localhost:1/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
    try:
        print("streams answered", repr(s.recv(100)))
    except OSError as e:
        print("streams answered error", e.errno)
    s.close()
print("inode", os.stat(d + "/tunnel.sock").st_ino)
with open("/proc/self/mountinfo") as f:
    for line in f:
        if " /run/wink-tunnel " in line:
            print("mount", line.split()[5])
`

// holdProxy opens a connection to the proxy, sends half a request, says
// so, and holds it open a while.
const holdProxy = `import socket, sys, time
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"GET http://localhost:1/ HTTP/1.1\r\n")
print("open", flush=True)
time.sleep(3)
print("held")
`

// proxyHolders lists, from the container's network namespace, the
// processes that hold the proxy port's established connections.
func proxyHolders(t *testing.T, container string) string {
	t.Helper()
	pid, err := exec.Command("podman", "inspect", "-f", "{{.State.Pid}}", container).Output()
	if err != nil {
		t.Fatalf("podman inspect %s: %v", container, err)
	}
	var out []byte
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, err = exec.Command("nsenter", "-t", strings.TrimSpace(string(pid)), "-n", "ss", "-tnpH", "state", "established", "( sport = :3128 )").Output()
		if err != nil {
			t.Fatalf("ss in %s's network namespace: %v", container, err)
		}
		if len(out) > 0 {
			break
		}
	}
	return string(out)
}

// On local Podman the tunnel rides the container's own socket, which the
// model can neither replace nor add to, which another session's container
// does not have, and which a process of the container connecting on its
// own does not disturb; a download and a port preview go through it. Each
// proxied connection is handed to the server on a socket beside it, which
// takes nothing from a connection that does not say the tunnel's nonce.
func TestEgressTunnelSocket(t *testing.T) {
	port := httpServerOnLoopback(t, "through the socket")
	p := start(t, startOptions{transport: "http", image: pythonImage, args: []string{"--warm", "0", "--egress", "localhost:" + port}})
	get := "GET http://localhost:" + port + "/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
	if out := rawProxy(t, p, get); !strings.Contains(out, "through the socket") {
		t.Fatalf("through the proxy: %q", out)
	}
	rec := p.waitLog(10*time.Second, "tunnel opened", nil)
	if rec["path"] != "socket" {
		t.Fatalf("the tunnel's log record: %v, want path socket", rec)
	}
	probe := py(t, p, socketProbe)
	for _, want := range []string{"entries ['streams-", ".sock', 'tunnel.sock']", "streams sockets 1", "plant failed 30", "unlink failed 30", "rename failed 30", "mount ro,"} {
		if !strings.Contains(probe, want) {
			t.Errorf("the probe lacks %q:\n%s", want, probe)
		}
	}
	if n := strings.Count(probe, "streams answered b''\n") + strings.Count(probe, "streams answered error 104\n"); n != 3 {
		t.Errorf("connections to the streams socket without the nonce: %d of 3 closed unanswered:\n%s", n, probe)
	}

	// A connection to the proxy is held by the server itself: the agent
	// handed it over and kept no descriptor of it.
	held := make(chan string, 1)
	go func() {
		held <- textOf(p.call("podman_shell", map[string]any{"command": []string{"python3", "-c", holdProxy}}))
	}()
	time.Sleep(500 * time.Millisecond)
	holders := proxyHolders(t, rec["container"].(string))
	if want := fmt.Sprintf("pid=%d,", p.cmd.Process.Pid); !strings.Contains(holders, want) || strings.Count(holders, "pid=") != 1 {
		t.Errorf("the proxied connection's holders, want only the server (%s):\n%s", want, holders)
	}
	if out := <-held; !strings.Contains(out, "held") {
		t.Errorf("the held connection: %s", out)
	}

	// The tunnel still carries the session's connections.
	if out := rawProxy(t, p, get); !strings.Contains(out, "through the socket") {
		t.Errorf("through the proxy after the probe: %q", out)
	}

	// A second session's container has its own socket, another file, and
	// no way to the first's.
	other := *p
	other.client = nil
	other.connect(nil)
	second := py(t, &other, socketProbe)
	inode := func(out string) string {
		_, after, _ := strings.Cut(out, "inode ")
		first, _, _ := strings.Cut(after, "\n")
		return first
	}
	if !strings.Contains(second, "streams sockets 1") || inode(second) == "" || inode(second) == inode(probe) {
		t.Errorf("the second container's socket (inode %q) against the first's (%q):\n%s", inode(second), inode(probe), second)
	}
	if out := other.run("sh", "-c", "find / -xdev -name '*.sock' 2>/dev/null; grep -c wink-tunnel /proc/self/mountinfo"); strings.TrimSpace(out.Stdout) != "1" {
		t.Errorf("sockets and tunnel mounts the second container sees: %q", out.Stdout)
	}
}

// A rootless Podman's container (its user a subordinate uid of the
// server's user) reaches the socket too, and the streams socket, which
// takes a port preview's connection as well.
func TestRootlessEgressTunnelSocket(t *testing.T) {
	u := needRootless(t)
	port := httpServerOnLoopback(t, "rootless through the socket")
	p := start(t, startOptions{as: u, env: u.shellEnv(t), image: pythonImage, args: append(append([]string{}, rootlessArgs...), "--egress", "localhost:"+port)})
	if out := rawProxy(t, p, "GET http://localhost:"+port+"/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); !strings.Contains(out, "rootless through the socket") {
		t.Fatalf("through the proxy: %q", out)
	}
	rec := p.waitLog(10*time.Second, "tunnel opened", nil)
	if rec["path"] != "socket" {
		t.Fatalf("the tunnel's log record: %v, want path socket", rec)
	}
	url := openPort(t, p, 8000)
	p.shell(map[string]any{"command": []string{"python3", "-c", previewServer}, "background": true})
	waitUntil(t, 10*time.Second, "the workspace's server through the URL", func() bool {
		status, _ := fetch(url + "big")
		return status == http.StatusOK
	})
	pid, err := u.podman("inspect", "-f", "{{.State.Pid}}", rec["container"].(string))
	if err != nil {
		t.Fatalf("podman inspect: %v %s", err, pid)
	}
	held := make(chan string, 1)
	go func() { _, body := fetch(url + "hold"); held <- body }()
	server := fmt.Sprintf("pid=%d,", p.cmd.Process.Pid)
	var holders string
	waitUntil(t, 3*time.Second, "the held connection", func() bool {
		holders = previewHoldersIn(t, strings.TrimSpace(pid))
		return strings.Contains(holders, "pid=")
	})
	if !strings.Contains(holders, server) || strings.Count(holders, "pid=") != 1 {
		t.Errorf("the preview connection's holders, want only the server (%s):\n%s", server, holders)
	}
	if body := <-held; body != "hd" {
		t.Errorf("through the preview: %q", body)
	}
	for _, rec := range p.logs.records() {
		if rec["msg"] == "a port preview's connection was not handed over; it rides the tunnel" {
			t.Errorf("the preview's hand-over failed: %v", rec)
		}
	}
}

package integration

import (
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

// streamsOpen counts the connected sockets on a streams socket in the
// container's network namespace, where the server's end of each is too
// (a Unix connection's accepted end belongs to its connecting end's
// namespace).
const streamsOpen = `def streams_open():
    with open("/proc/net/unix") as f:
        return sum(1 for line in f if "/streams-" in line and line.split()[5] == "03")
`

// holdProxy counts the streams sockets' connections before, while and
// after a connection to the proxy is open.
const holdProxy = streamsOpen + `import socket, time
def settle(want):
    for _ in range(50):
        if streams_open() == want:
            break
        time.sleep(0.1)
    return streams_open()
print("before", settle(0))
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"GET http://localhost:1/ HTTP/1.1\r\n")
print("open", settle(1))
s.close()
print("after", settle(0))
`

// On local Podman the tunnel rides the container's own socket, which the
// model can neither replace nor add to, which another session's container
// does not have, and which a process of the container connecting on its
// own does not disturb; a download and a port preview go through it. Each
// proxied connection gets a socket of its own beside it, which takes no
// connection that does not say the tunnel's nonce.
func TestEgressTunnelSocket(t *testing.T) {
	port := httpServerOnLoopback(t, "through the socket")
	p := start(t, startOptions{transport: "http", image: pythonImage, args: []string{"--warm", "0", "--egress", "localhost:" + port}})
	get := "GET http://localhost:" + port + "/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
	if out := rawProxy(t, p, get); !strings.Contains(out, "through the socket") {
		t.Fatalf("through the proxy: %q", out)
	}
	if rec := p.waitLog(10*time.Second, "tunnel opened", nil); rec["path"] != "socket" {
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

	// A connection to the proxy is one to the server's streams socket (its
	// server's end, which names the socket, is counted), gone when it closes.
	if out := py(t, p, holdProxy); out != "before 0\nopen 1\nafter 0\n" {
		t.Errorf("connected ends on the streams socket before, while and after a proxy connection:\n%s", out)
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
// server's user) reaches the socket too, and the streams socket.
func TestRootlessEgressTunnelSocket(t *testing.T) {
	u := needRootless(t)
	port := httpServerOnLoopback(t, "rootless through the socket")
	p := start(t, startOptions{as: u, env: u.shellEnv(t), image: pythonImage, args: append(append([]string{}, rootlessArgs...), "--egress", "localhost:"+port)})
	if out := rawProxy(t, p, "GET http://localhost:"+port+"/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); !strings.Contains(out, "rootless through the socket") {
		t.Fatalf("through the proxy: %q", out)
	}
	if rec := p.waitLog(10*time.Second, "tunnel opened", nil); rec["path"] != "socket" {
		t.Fatalf("the tunnel's log record: %v, want path socket", rec)
	}
	if out := py(t, p, holdProxy); out != "before 0\nopen 1\nafter 0\n" {
		t.Errorf("connected ends on the streams socket before, while and after a proxy connection:\n%s", out)
	}
}

package integration

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// previewServer runs in the workspace: on port 8000, /big answers 32 MiB
// of a known pattern, /hold half an answer then the rest 4 s later, /cut
// 8 MiB of a 64 MiB answer and then a reset.
const previewServer = `import socket, struct, threading, time
body = bytes(range(256)) * ((32 << 20) // 256)
def serve(c):
    try:
        req = b""
        while b"\r\n\r\n" not in req:
            got = c.recv(4096)
            if not got:
                return
            req += got
        path = req.split(b" ")[1]
        if path == b"/hold":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nh")
            time.sleep(4)
            c.sendall(b"d")
        elif path == b"/cut":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (64 << 20))
            c.sendall(body[:8 << 20])
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
            c.sendall(body)
    except OSError:
        pass
    finally:
        c.close()
ln = socket.socket()
ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ln.bind(("127.0.0.1", 8000))
ln.listen(128)
while True:
    c, _ = ln.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`

// handoverForger runs in the workspace as a hostile process: it takes
// every nonce it can read in /proc (the relay's environment, say) and a
// made-up one, greets each streams socket with each, and hands over, past
// the tunnel's cap, its own connection to port 8000 under made-up tokens,
// a pipe under a preview's tag, and that connection as a proxy's.
const handoverForger = `import array, os, re, secrets, socket
nonces = {secrets.token_hex(16)}
for pid in os.listdir("/proc"):
    try:
        nonces.update(re.findall(rb"WINK_TUNNEL_NONCE=([0-9a-f]{32})", open("/proc/%s/environ" % pid, "rb").read()))
    except (OSError, ValueError):
        pass
nonces = {n.decode() if isinstance(n, bytes) else n for n in nonces}
print("nonces", len(nonces))
d = "/run/wink-tunnel"
own = socket.create_connection(("127.0.0.1", 8000))
r, w = os.pipe()
sent = 0
for name in os.listdir(d):
    if not name.startswith("streams-"):
        continue
    for nonce in nonces:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        try:
            s.connect(d + "/" + name)
            s.sendall(("wink-stream %s\n" % nonce).encode())
            for i in range(1100):
                s.sendmsg([b"p" + secrets.token_hex(16).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [own.fileno()]))])
                sent += 1
            s.sendmsg([b"p" + secrets.token_hex(16).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
            s.sendmsg([b"\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [own.fileno()]))])
            sent += 2
        except OSError as e:
            print("refused", e.errno)
        s.close()
print("sent", sent)
`

// previewHolders lists, from the container's network namespace, the
// processes holding a connection to port 8000 (its client end).
func previewHolders(t *testing.T, container string) string {
	t.Helper()
	pid, err := exec.Command("podman", "inspect", "-f", "{{.State.Pid}}", container).Output()
	if err != nil {
		t.Fatalf("podman inspect %s: %v", container, err)
	}
	return previewHoldersIn(t, strings.TrimSpace(string(pid)))
}

// previewHoldersIn is previewHolders in the network namespace of the
// process pid.
func previewHoldersIn(t *testing.T, pid string) string {
	t.Helper()
	out, err := exec.Command("nsenter", "-t", pid, "-n", "ss", "-tnpH", "state", "established", "( dport = :8000 )").Output()
	if err != nil {
		t.Fatalf("ss in the network namespace of %s: %v", pid, err)
	}
	return string(out)
}

// On local Podman a port preview's connection is the agent's own, handed
// to the server, which then holds it alone: 32 MiB come through whole; a
// connection the container's server resets mid-answer, and one the
// browser drops mid-download, end there and free their place; a hostile
// process with every nonce it can read, handing over its own sockets
// under made-up tokens past the tunnel's cap, a pipe, and its connection
// to the port as a proxy's, gets none of them used, and the preview goes
// on.
func TestPortPreviewHandedOver(t *testing.T) {
	p := start(t, startOptions{transport: "http", image: pythonImage, args: []string{"--warm", "0"}})
	url := openPort(t, p, 8000)
	p.shell(map[string]any{"command": []string{"python3", "-c", previewServer}, "background": true})
	pattern := make([]byte, 256)
	for i := range pattern {
		pattern[i] = byte(i)
	}
	want := sha256.Sum256(bytes.Repeat(pattern, (32<<20)/256))
	big := func() error {
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Get(url + "big")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || n != 32<<20 || !bytes.Equal(h.Sum(nil), want[:]) {
			return fmt.Errorf("status %d, %d bytes of %d (the same bytes: %v), %v", resp.StatusCode, n, 32<<20, bytes.Equal(h.Sum(nil), want[:]), err)
		}
		return nil
	}
	waitUntil(t, 10*time.Second, "the workspace's server through the URL", func() bool { return big() == nil })
	rec := p.waitLog(10*time.Second, "tunnel opened", nil)
	if rec["path"] != "socket" {
		t.Fatalf("the tunnel's log record: %v, want path socket", rec)
	}
	container := rec["container"].(string)

	// A held connection is the server's alone: the agent kept no descriptor.
	held := make(chan string, 1)
	go func() { _, body := fetch(url + "hold"); held <- body }()
	server := fmt.Sprintf("pid=%d,", p.cmd.Process.Pid)
	var holders string
	waitUntil(t, 3*time.Second, "the held connection", func() bool {
		holders = previewHolders(t, container)
		return strings.Contains(holders, "pid=")
	})
	if !strings.Contains(holders, server) || strings.Count(holders, "pid=") != 1 {
		t.Errorf("the preview connection's holders, want only the server (%s):\n%s", server, holders)
	}
	if body := <-held; body != "hd" {
		t.Errorf("the held answer: %q", body)
	}

	// Reset by the container's server mid-answer: the browser's read fails, at once.
	begin := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url + "cut")
	if err == nil {
		n, rerr := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if rerr == nil || n >= 64<<20 {
			t.Errorf("a reset answer: %d bytes, %v; want an error before 64 MiB", n, rerr)
		}
	}
	if took := time.Since(begin); took > 20*time.Second {
		t.Errorf("a reset answer took %s to fail", took)
	}
	// Dropped by the browser after 1 MiB, three times.
	for range 3 {
		resp, err := http.Get(url + "big")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.CopyN(io.Discard, resp.Body, 1<<20)
		resp.Body.Close()
	}
	waitUntil(t, 10*time.Second, "the cut and dropped connections to go", func() bool {
		return !strings.Contains(previewHolders(t, container), server)
	})

	forged := py(t, p, handoverForger)
	var nonces, sent int
	if !strings.Contains(forged, "nonces") || !strings.Contains(forged, "sent") {
		t.Fatalf("the forger: %s", forged)
	}
	if _, err := fmt.Sscanf(forged[strings.Index(forged, "nonces"):], "nonces %d", &nonces); err != nil {
		t.Fatalf("the forger: %s", forged)
	}
	if _, err := fmt.Sscanf(forged[strings.Index(forged, "sent"):], "sent %d", &sent); err != nil || (nonces > 1 && sent < 1102) {
		t.Fatalf("the forger read %d nonces (one made up) but sent only %d hand-overs (%v):\n%s", nonces, sent, err, forged)
	}
	t.Logf("the forger: %s", strings.TrimSpace(forged))
	if err := big(); err != nil {
		t.Errorf("the preview after the forger: %v", err)
	}
	if holders := previewHolders(t, container); strings.Contains(holders, server) {
		t.Errorf("the server holds a connection to port 8000 after the forger (one of its own):\n%s", holders)
	}
}

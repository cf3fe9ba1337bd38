package integration

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// endlessOnLoopback serves an endless body on the host's loopback, slowly
// enough that a download is open while the test narrows the egress, and
// returns its port.
func endlessOnLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("x", 16<<10))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// "Install, then lock" in a real container: a download from a real
// registry goes through, workspace_egress lists where each pattern came
// from, a drop cuts the open download its pattern carried, no argument
// shape adds a host back, and after a lock the same download is refused
// with a message naming the lock.
func TestEgressDropAndLock(t *testing.T) {
	r := machineRegistries(t)
	port := endlessOnLoopback(t)
	local := "localhost:" + port
	p := start(t, startOptions{image: pythonImage, args: []string{"--warm", "0", "--egress", r.npm.Hostname(), "--egress", local}})
	caBundle(t, p)
	fetchMeta := fmt.Sprintf(`import urllib.request, urllib.error
try:
    meta = urllib.request.urlopen(%q).read()
    print("ok", len(meta))
except urllib.error.URLError as e:
    print("refused", e)
    body = getattr(e, "read", None)
    if body:
        print(body().decode())
`, r.npm.JoinPath("left-pad").String())
	if out := py(t, p, fetchMeta); !strings.HasPrefix(out, "ok ") {
		t.Fatalf("the download before the lock: %q", out)
	}

	list := p.call("workspace_egress", map[string]any{"action": "list"})
	if list.IsError || !strings.Contains(textOf(list), r.npm.Hostname()+"  (from the server's --egress)") || !strings.Contains(textOf(list), local+"  (from the server's --egress)") {
		t.Fatalf("list: %s", textOf(list))
	}

	// An open download through the explicit local pattern, cut by its drop.
	job := p.shell(map[string]any{"background": true, "command": []string{"python3", "-c", fmt.Sprintf(`import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET http://%s/ HTTP/1.1\r\nHost: x\r\n\r\n")
got = 0
while True:
    n = len(s.recv(65536))
    if n == 0:
        break
    got += n
    open("/tmp/got", "w").write(str(got))
open("/tmp/ended", "w").write(str(got))
`, local)}})
	if job.ExitCode != 0 {
		t.Fatalf("starting the download: %+v", job)
	}
	waitUntil(t, 20*time.Second, "the local download to be under way", func() bool {
		got, _ := strconv.Atoi(strings.TrimSpace(p.run("sh", "-c", "cat /tmp/got 2>/dev/null || echo 0").Stdout))
		return got > 100000
	})
	drop := p.call("workspace_egress", map[string]any{"action": "drop", "pattern": local})
	if drop.IsError || !strings.Contains(textOf(drop), "dropped: "+local) || !strings.Contains(textOf(drop), "1 open connection(s) cut") {
		t.Fatalf("drop: %s", textOf(drop))
	}
	waitUntil(t, 10*time.Second, "the cut download to end", func() bool {
		return p.run("test", "-e", "/tmp/ended").ExitCode == 0
	})
	again := rawProxy(t, p, "GET http://"+local+"/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if !strings.Contains(again, "403") || !strings.Contains(again, local+" was dropped for the rest of this session (workspace_egress drop)") {
		t.Errorf("after the drop: %q", again)
	}

	// The model cannot add anything back, whatever it tries.
	for _, args := range []map[string]any{
		{"action": "add", "pattern": local},
		{"action": "allow", "pattern": "*"},
		{"action": "unlock"},
		{"action": "list", "add": []string{local}},
		{"pattern": local},
	} {
		res := p.call("workspace_egress", args)
		if !res.IsError || !strings.Contains(textOf(res), "never adds or re-allows a host, which is the user's decision") {
			t.Errorf("%v: %s (isError %v)", args, textOf(res), res.IsError)
		}
	}

	lock := p.call("workspace_egress", map[string]any{"action": "lock"})
	if lock.IsError || !strings.Contains(textOf(lock), "egress is locked for the rest of this session") {
		t.Fatalf("lock: %s", textOf(lock))
	}
	if out := py(t, p, fetchMeta); !strings.HasPrefix(out, "refused") || !strings.Contains(out, "403") {
		t.Errorf("the download after the lock: %q", out)
	}
	host := r.npm.Hostname()
	if out := rawProxy(t, p, "CONNECT "+host+":443 HTTP/1.1\r\nHost: "+host+":443\r\n\r\n"); !strings.Contains(out, "403") ||
		!strings.Contains(out, "egress is locked for the rest of this session (workspace_egress lock)") {
		t.Errorf("the registry after the lock: %q", out)
	}
	p.waitLog(10*time.Second, "egress locked", map[string]any{"event": "egress_narrowed"})
}

// Under MCP 2026-07-28 workspace_egress takes the workspace handle like
// every workspace tool; a lock holds for that handle's workspace only.
func TestEgressLockUnderAHandle(t *testing.T) {
	port := httpServerOnLoopback(t, "reached")
	tokenFile, _ := twoTokens(t)
	p := launch(t, startOptions{transport: "http", image: pythonImage, args: []string{"--auth-token-file", tokenFile, "--warm", "0", "--egress", "localhost:" + port}})
	c := modernClient(t, p.url, testToken)
	locked, open := openHandle(t, c, nil), openHandle(t, c, nil)
	fetch := func(handle string) string {
		text, _ := callTool(t, c, "podman_shell", map[string]any{"workspace": handle, "command": []string{"python3", "-c", fmt.Sprintf(`import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"GET http://localhost:%s/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:  # a response may come in several segments: read to the end
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data.decode(errors="replace"))
`, port)}})
		return text
	}
	if out := fetch(locked); !strings.Contains(out, "reached") {
		t.Fatalf("before the lock: %s", out)
	}
	if text, isError := callTool(t, c, "workspace_egress", map[string]any{"workspace": locked, "action": "lock"}); isError || !strings.Contains(text, "egress is locked") {
		t.Fatalf("lock under a handle: %s", text)
	}
	if out := fetch(locked); !strings.Contains(out, "egress is locked for the rest of this session (workspace_egress lock)") {
		t.Errorf("the locked handle's workspace: %s", out)
	}
	if out := fetch(open); !strings.Contains(out, "reached") {
		t.Errorf("the other handle's workspace after the lock: %s", out)
	}
	if text, isError := callTool(t, c, "workspace_egress", map[string]any{"action": "list"}); !isError {
		t.Errorf("workspace_egress without a handle from a 2026-07-28 client: %s", text)
	}
}

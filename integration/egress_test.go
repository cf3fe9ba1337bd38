package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/egress"
)

// registries are the package registries this machine reaches, read from
// its own configuration (npm's registry, the Go module proxy, apt's
// sources), never written into the tests.
type registries struct {
	npm    *url.URL // an https registry
	goprox *url.URL // an https module proxy
	apt    []string // the hosts of the http Debian archives apt uses
}

func machineRegistries(t *testing.T) registries {
	t.Helper()
	var r registries
	if out, err := exec.Command("npm", "config", "get", "registry").Output(); err == nil {
		r.npm, _ = url.Parse(strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("go", "env", "GOPROXY").Output(); err == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), ",")
		r.goprox, _ = url.Parse(first)
	}
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	for _, f := range append([]string{"/etc/apt/sources.list"}, files...) {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			for _, field := range strings.Fields(sc.Text()) {
				if u, err := url.Parse(field); err == nil && u.Scheme == "http" && strings.Contains(u.Path, "debian") && !slices.Contains(r.apt, u.Hostname()) {
					r.apt = append(r.apt, u.Hostname())
				}
			}
		}
	}
	if r.npm == nil || r.npm.Scheme != "https" || r.goprox == nil || r.goprox.Scheme != "https" || len(r.apt) == 0 {
		msg := fmt.Sprintf("this machine's registries are not all configured (npm %v, GOPROXY %v, apt %v)", r.npm, r.goprox, r.apt)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return r
}

// caBundle puts this machine's CA bundle into the workspace, so TLS
// through the proxy is verified against what this machine trusts (the
// image has no CA certificates; the proxy never terminates TLS).
func caBundle(t *testing.T, p *proc) {
	t.Helper()
	data, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatalf("this machine's CA bundle: %v", err)
	}
	const part = 40000 // under write_file's limit
	var parts []string
	for i := 0; i*part < len(data); i++ {
		name := fmt.Sprintf(".ca/%03d", i)
		if res := p.call("write_file", map[string]any{"file_path": name, "content": string(data[i*part : min(len(data), (i+1)*part)])}); res.IsError {
			t.Fatalf("write_file %s: %s", name, textOf(res))
		}
		parts = append(parts, name)
	}
	if out := p.run("sh", "-c", "cat "+strings.Join(parts, " ")+" > ca.pem && rm -r .ca"); out.ExitCode != 0 {
		t.Fatalf("joining the CA bundle: %s", out.Stderr)
	}
}

// py runs a Python program in the workspace with the CA bundle and
// returns its output; a non-zero exit fails the test.
func py(t *testing.T, p *proc, program string) string {
	t.Helper()
	return pyStdin(t, p, program, "")
}

// pyStdin is py with stdin given to the program.
func pyStdin(t *testing.T, p *proc, program, stdin string) string {
	t.Helper()
	out := p.shell(map[string]any{"command": []string{"python3", "-c", program}, "stdin": stdin,
		"env": map[string]any{"SSL_CERT_FILE": "/workspace/ca.pem"}, "timeout_seconds": 120})
	if out.ExitCode != 0 {
		t.Fatalf("python exited %d\nstdout: %s\nstderr: %s", out.ExitCode, out.Stdout, out.Stderr)
	}
	return out.Stdout
}

// rawProxy sends request to the container's proxy as it is, from inside
// the workspace, and returns the start of the answer. "{100KiB}" in
// request stands for 100 KiB of "a" (more than a call's stdin may hold).
func rawProxy(t *testing.T, p *proc, request string) string {
	t.Helper()
	return pyStdin(t, p, `import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(sys.stdin.buffer.read().replace(b"{100KiB}", b"a" * (100 << 10)))
data = b""
while len(data) < 4096:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(data[:4096].decode(errors="replace"))
`, request)
}

// The container's commands reach the allowed registries through the proxy
// (TLS end to end, verified; plain HTTP forwarded) with the ecosystems'
// own clients where the image has them, and nothing else.
func TestEgressReachesTheAllowedRegistries(t *testing.T) {
	r := machineRegistries(t)
	eachTransport(t, func(t *testing.T, tr string) {
		args := []string{"--warm", "0", "--egress", r.npm.Hostname(), "--egress", r.goprox.Hostname()}
		for _, host := range r.apt {
			args = append(args, "--egress", host)
		}
		p := start(t, startOptions{transport: tr, image: pythonImage, args: args})
		caBundle(t, p)
		env := p.run("sh", "-c", "echo $HTTPS_PROXY $http_proxy $NO_PROXY")
		if strings.TrimSpace(env.Stdout) != "http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1" {
			t.Errorf("proxy environment: %q", env.Stdout)
		}
		// An npm package's metadata over CONNECT, then its tarball, checked
		// against the registry's own digest.
		out := py(t, p, fmt.Sprintf(`import urllib.request, json, hashlib
meta = json.load(urllib.request.urlopen(%q))
dist = meta["versions"][meta["dist-tags"]["latest"]]["dist"]
tgz = urllib.request.urlopen(dist["tarball"]).read()
print("sha1", hashlib.sha1(tgz).hexdigest() == dist["shasum"], len(tgz))
`, r.npm.JoinPath("left-pad").String()))
		if !strings.HasPrefix(out, "sha1 True") {
			t.Errorf("npm tarball: %q", out)
		}
		// The Go module proxy's version list over CONNECT.
		out = py(t, p, fmt.Sprintf(`import urllib.request
print(urllib.request.urlopen(%q).read().decode())
`, r.goprox.JoinPath("golang.org/x/text/@v/list").String()))
		if !strings.Contains(out, "v0.") {
			t.Errorf("Go module proxy list: %q", out)
		}
		// apt, the image's own client, over plain HTTP forwarding (the
		// image, built from this machine's archive, names the same hosts).
		apt := p.shell(map[string]any{"command": []string{"sh", "-c",
			"mkdir -p /tmp/apt/lists/partial /tmp/apt/cache/archives/partial && o='-o Dir::State::Lists=/tmp/apt/lists -o Dir::Cache=/tmp/apt/cache -o Debug::NoLocking=1 -o APT::Sandbox::User=nobody -o Acquire::Languages=none' && " +
				"apt-get $o -q update >/tmp/apt/update.log 2>&1; cd /workspace && apt-get $o -q download hello && ls hello_*.deb"}, "timeout_seconds": 120})
		if apt.ExitCode != 0 || !strings.Contains(apt.Stdout, "hello_") {
			log := p.run("sh", "-c", "tail -5 /tmp/apt/update.log")
			t.Errorf("apt-get download: exit %d %s %s (update: %s)", apt.ExitCode, apt.Stdout, apt.Stderr, log.Stdout)
		}
		// A host no pattern names: refused, saying how to allow it.
		out = rawProxy(t, p, "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
		if !strings.Contains(out, "403") || !strings.Contains(out, "--egress example.org") {
			t.Errorf("refusal: %q", out)
		}
		if rec := p.waitLog(10*time.Second, "egress allowed", map[string]any{"host": r.npm.Hostname(), "kind": "connect"}); rec["bytes"].(float64) <= 0 || rec["session"] == nil {
			t.Errorf("log record %v lacks bytes or session", rec)
		}
		// The server's stderr reaches the test's buffer through a pipe, a
		// moment after the refusal reached the container.
		p.waitLog(10*time.Second, "egress refused", map[string]any{"host": "example.org"})
	})
}

// Every way out that the allowlist does not name fails inside a real
// container: no interface to send on, and a proxy that refuses loopback,
// this machine's addresses, its neighbours, IP literals, other ports and
// hostile requests. Part of the reliability suite.
func TestReliabilityEgressEscapes(t *testing.T) {
	r := machineRegistries(t)
	own := ownIPv4(t)
	local := httpServerOnLoopback(t, "the host's loopback")
	p := start(t, startOptions{transport: "http", image: pythonImage, args: []string{"--warm", "0",
		"--egress", r.npm.Hostname(), "--egress", "localhost", "--egress", own, "--egress", "*.localhost.localdomain"}})
	_, serverPort, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(p.url, "http://"), "https://"))
	serverPort, _, _ = strings.Cut(serverPort, "/")
	cases := map[string]struct{ request, want string }{
		"an allowed name on another port":       {"CONNECT " + r.npm.Hostname() + ":22 HTTP/1.1\r\n\r\n", "403"},
		"a name that resolves to loopback":      {"CONNECT localhost:443 HTTP/1.1\r\n\r\n", "loopback"},
		"this machine's address":                {"CONNECT " + own + ":443 HTTP/1.1\r\n\r\n", "of this machine"},
		"the server's own port":                 {"CONNECT 127.0.0.1:" + serverPort + " HTTP/1.1\r\n\r\n", "403"},
		"the server's port by name":             {"CONNECT localhost:" + serverPort + " HTTP/1.1\r\n\r\n", "403"},
		"a loopback server the host runs":       {"GET http://localhost:" + local + "/ HTTP/1.1\r\nHost: localhost\r\n\r\n", "403"},
		"a decimal IP literal":                  {"CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", "non-standard"},
		"an octal IP literal":                   {"CONNECT 0177.0.0.1:443 HTTP/1.1\r\n\r\n", "non-standard"},
		"an IPv4-mapped IPv6 literal":           {"CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n", "403"},
		"the unspecified IPv6 address":          {"CONNECT [::]:443 HTTP/1.1\r\n\r\n", "403"},
		"a metadata service":                    {"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n", "403"},
		"a hostile Host header":                 {"GET http://example.org/ HTTP/1.1\r\nHost: " + r.npm.Hostname() + "\r\n\r\n", "example.org"},
		"a request line of 100 KiB":             {"GET http://" + r.npm.Hostname() + "/{100KiB} HTTP/1.1\r\n\r\n", "431"},
		"a malformed request":                   {"\x00\x01 nonsense\r\n\r\n", "400"},
		"smuggling: Content-Length and chunked": {"POST http://" + r.npm.Hostname() + "/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://example.org/ HTTP/1.1\r\n\r\n", "HTTP/1.1 4"},
		"a wildcard name that does not resolve": {"CONNECT nowhere.localhost.localdomain:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 "},
	}
	broken := 0
	for name, c := range cases {
		out := rawProxy(t, p, c.request)
		if !strings.Contains(out, c.want) || strings.Contains(out, " 200 ") || strings.Contains(out, "the host's loopback") {
			t.Errorf("%s: %q; want %q and no connection", name, out, c.want)
			broken++
		}
	}
	// No way around the proxy: the container has no interface but loopback.
	out := py(t, p, fmt.Sprintf(`import socket
for addr in [(%q, 443), (%q, 80), ("1.1.1.1", 53)]:
    try:
        socket.create_connection(addr, timeout=5)
        print("CONNECTED", addr)
    except OSError as e:
        print("refused", addr, e)
`, resolveOne(t, r.npm.Hostname()), own))
	if n := strings.Count(out, "CONNECTED"); n > 0 {
		t.Errorf("a raw socket got out: %s", out)
		broken += n
	}
	recordPromise(promiseFigure{Class: "egress escapes: requests to the proxy from a real container for what --egress does not name, and raw sockets",
		Tried: len(cases) + 3, Broken: broken,
		Measured: "each refused with a 403, 400 or 431 naming why (loopback, this machine, a private or metadata address, the port, a non-standard address); raw sockets found no network"})
}

// A pattern that names a host and a port reaches it on purpose, even on
// this machine's loopback (a local model server, say). NO_PROXY sends
// "localhost" to the container's own loopback, so the client talks to the
// proxy itself.
func TestEgressExplicitLocalPattern(t *testing.T) {
	port := httpServerOnLoopback(t, "local model server")
	p := start(t, startOptions{image: pythonImage, args: []string{"--warm", "0", "--egress", "localhost:" + port}})
	out := rawProxy(t, p, "GET http://localhost:"+port+"/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	if !strings.Contains(out, "local model server") {
		t.Fatalf("through the explicit pattern: %q", out)
	}
}

// A crowd of connections: the session's cap (--egress-max-conns, 256 by
// default) holds, the ones past it wait for a free place and, when none
// frees, are answered with a refusal naming wink-mcp's limit, never left
// hanging; the session's own calls go on. Part of the reliability suite.
func TestReliabilityEgressFlood(t *testing.T) {
	r := machineRegistries(t)
	p := start(t, startOptions{transport: "http", image: pythonImage, args: []string{"--warm", "0", "--egress", r.npm.Hostname()}})
	done := neighbourCalls(t, p) // another session of the same server, calling while the flood runs
	out := py(t, p, fmt.Sprintf(`import socket, collections
socks, seen = [], collections.Counter()
for i in range(500):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=90)
        s.sendall(b"CONNECT %s:443 HTTP/1.1\r\n\r\n")
        socks.append(s)
    except OSError as e:
        seen["connect " + type(e).__name__] += 1
for s in socks:
    try:
        line = s.recv(64).split(b"\r\n")[0].decode()
        seen[line] += 1
    except OSError as e:
        seen[type(e).__name__] += 1
print(dict(seen))
`, r.npm.Hostname()))
	calls, failed := done()
	established, refused := countAfter(out, "'HTTP/1.1 200 Connection established': "), countAfter(out, "'HTTP/1.1 503 wink-mcp egress limit --egress-max-conns 256': ")
	broken := 0
	if established == 0 || established > egress.DefaultMaxConns || established+refused != 500 {
		t.Errorf("500 connections: %s; want at most %d established and the rest refused naming --egress-max-conns after waiting", out, egress.DefaultMaxConns)
		broken++
	}
	waited := p.logs.find("egress refused", map[string]any{"status": 503})
	begin := time.Now()
	if got := p.run("echo", "still here"); strings.TrimSpace(got.Stdout) != "still here" {
		t.Errorf("after the flood: %q", got.Stdout)
		broken++
	}
	after := time.Since(begin)
	if failed > 0 || len(calls) == 0 {
		t.Errorf("the neighbour session: %d calls failed, %d answered during the flood", failed, len(calls))
		broken++
	}
	if refused > 0 && (waited == nil || waited["waited_ms"].(float64) < float64(egress.DefaultQueueWait.Milliseconds())) {
		t.Errorf("the refusals past the cap did not wait for a place first: %v", waited)
		broken++
	}
	recordPromise(promiseFigure{Class: "egress flood: 500 CONNECTs at once from one session's container, held open, another session calling meanwhile", Tried: 500, Broken: broken,
		Measured: fmt.Sprintf("%d established (the cap, --egress-max-conns, is %d), %d waited %s for a place and were refused naming the flag; the next podman_shell answered in %d ms; the other session's %d calls during the flood: p99 %.1f ms, 0 failed",
			established, egress.DefaultMaxConns, refused, egress.DefaultQueueWait, after.Milliseconds(), len(calls), percentile(calls, 99))})
}

// countAfter reads the number after label in a printed Python dict (0 when absent).
func countAfter(out, label string) int {
	_, rest, ok := strings.Cut(out, label)
	if !ok {
		return 0
	}
	n := 0
	fmt.Sscanf(rest, "%d", &n)
	return n
}

// ownIPv4 returns this machine's first non-loopback IPv4 address.
func ownIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("no IPv4 address besides loopback")
	return ""
}

func resolveOne(t *testing.T, host string) string {
	t.Helper()
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 {
		t.Fatalf("resolving %s: %v", host, err)
	}
	return addrs[0]
}

// httpServerOnLoopback serves body on the host's loopback and returns its port.
func httpServerOnLoopback(t *testing.T, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// userAnswers answers the server's questions as a user would: yes for the
// hosts in allow, no for the rest, and records each question.
type userAnswers struct {
	allow     []string
	mu        sync.Mutex
	questions []string
}

func (u *userAnswers) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.mu.Lock()
	u.questions = append(u.questions, req.Params.Message)
	u.mu.Unlock()
	for _, host := range u.allow {
		if strings.Contains(req.Params.Message, " "+host+" ") {
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"allow": true}}}, nil
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

func (u *userAnswers) asked() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.questions)
}

// With --egress-ask, a host no pattern names is put to the user by MCP
// elicitation while the command waits: yes lets it through for the
// session (and is not asked again), no refuses it saying so. A client that
// cannot be asked (mcp-go's SSE client) gets the refusal, saying why. A
// client that offers the newest revision is asked too: this server
// negotiates one that has requests from the server.
func TestEgressAskTheUser(t *testing.T) {
	r := machineRegistries(t)
	for _, tr := range []string{"stdio", "http", "sse", "stdio-newest"} {
		t.Run(tr, func(t *testing.T) {
			user := &userAnswers{allow: []string{r.npm.Hostname()}}
			opts := startOptions{transport: tr, image: pythonImage, elicit: user, protocol: mcp.ProtocolVersion20250618,
				args: []string{"--warm", "0", "--egress-ask"}}
			if tr == "stdio-newest" {
				opts.transport, opts.protocol = "stdio", ""
			}
			p := start(t, opts)
			caBundle(t, p)
			fetchNPM := fmt.Sprintf(`import urllib.request
print(urllib.request.urlopen(%q).status)
`, r.npm.JoinPath("left-pad").String())
			if tr == "sse" {
				out := rawProxy(t, p, "CONNECT "+r.npm.Hostname()+":443 HTTP/1.1\r\n\r\n")
				if !strings.Contains(out, "403") || !strings.Contains(out, "asking the user failed") {
					t.Errorf("a client that cannot be asked: %q", out)
				}
				if len(user.asked()) != 0 {
					t.Errorf("asked %q", user.asked())
				}
				return
			}
			if out := py(t, p, fetchNPM); strings.TrimSpace(out) != "200" {
				t.Errorf("after the user's yes: %q", out)
			}
			if out := py(t, p, fetchNPM); strings.TrimSpace(out) != "200" {
				t.Errorf("the second time: %q", out)
			}
			out := rawProxy(t, p, "CONNECT "+r.goprox.Hostname()+":443 HTTP/1.1\r\n\r\n")
			if !strings.Contains(out, "403") || !strings.Contains(out, "the user declined it") {
				t.Errorf("after the user's no: %q", out)
			}
			q := user.asked()
			if len(q) != 2 || !strings.Contains(q[0], r.npm.Hostname()+" on port 443") || !strings.Contains(q[1], r.goprox.Hostname()) {
				t.Errorf("questions %q; want one for each host", q)
			}
		})
	}
}

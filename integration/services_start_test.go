package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// redisCall sends Redis inline commands to 127.0.0.1:port from the
// workspace (whose profile has Python, not redis-cli) and returns the
// replies, one a line.
func redisCall(p *proc, port string, commands ...string) string {
	p.t.Helper()
	script := `import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
f = s.makefile("rb")
for c in sys.argv[2:]:
    s.sendall(c.encode() + b"\r\n")
    line = f.readline().decode().strip()
    if line.startswith("$") and line != "$-1":
        line = f.readline().decode().strip()
    print(line)
`
	out := p.run(append([]string{"python3", "-c", script, port}, commands...)...)
	return strings.TrimSpace(out.Stdout + out.Stderr)
}

// TestDeclaredServicesStartWithTheWorkspaceAndOutliveItsContainer: a
// profile's autostart services start before the workspace's first call
// runs, their dependencies first; one that fails is reported by list and
// does not hold the workspace up; the services then outlive the
// workspace's container (the idle clean-up, podman_shell stop): the next
// container reaches the same ones, with their data, at the same ports.
func TestDeclaredServicesStartWithTheWorkspaceAndOutliveItsContainer(t *testing.T) {
	file := servicesProfileFile(t)
	p := start(t, startOptions{image: pythonImage, env: []string{"APT_MIRROR_HOST=" + aptMirrorHost(t)},
		args: []string{"--profiles", file, "--profile", "svc-auto", "--warm", "0", "--idle-timeout", "4s"}})
	if text := p.promptText(); !strings.Contains(text, "kv at 127.0.0.1:6391 (starts with the workspace)") {
		t.Errorf("the prompt does not say kv starts with the workspace:\n%s", text)
	}

	begin := time.Now()
	if got := redisCall(p, "6391", "PING", "SET k kept", "GET k"); got != "+PONG\n+OK\nkept" {
		t.Fatalf("the autostarted kv service from the first call: %q", got)
	}
	t.Logf("first call with its autostarted services: %s", time.Since(begin))
	if got := redisCall(p, "6392", "PING"); got != "+PONG" {
		t.Errorf("first, which kv depends on: %q", got)
	}
	var list tools.WorkspaceServiceResult
	decodeStructured(t, p.call("workspace_service", map[string]any{"action": "list"}), &list)
	byName := map[string]tools.ServiceView{}
	for _, v := range list.Services {
		byName[v.Name] = v
	}
	kv, first, broken := byName["kv"], byName["first"], byName["broken"]
	if !kv.Running || !first.Running {
		t.Fatalf("kv and first should run: %+v", list.Services)
	}
	if !broken.Declared || !broken.Autostart || !strings.Contains(broken.Problem, "command ended (exit code 1) before it was ready") {
		t.Errorf("the broken autostart service is not reported: %+v", broken)
	}
	created := func(name string) time.Time {
		out, err := podman(t, "inspect", "--format", "{{.Created.UnixNano}}", name)
		if err != nil {
			t.Fatalf("inspecting %s: %v %s", name, err, out)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			t.Fatalf("%s's creation time: %q", name, out)
		}
		return time.Unix(0, n)
	}
	if !created(first.Container).Before(created(kv.Container)) {
		t.Errorf("kv's container was made before first's, which it depends on")
	}

	// A compose file's subset: refused keys named, then its services up,
	// dependencies first.
	p.run("sh", "-c", "mkdir -p proj && printf 'services:\\n  c:\\n    image: svc-redis\\n    command: [x]\\n    volumes: [\"/:/host\"]\\n' > proj/compose.yaml")
	res := p.call("workspace_service", map[string]any{"action": "compose_up", "compose_file": "proj/compose.yaml"})
	if text := textOf(res); !res.IsError || !strings.Contains(text, "compose_file: /workspace/proj/compose.yaml:5: services.c.volumes: is not in the subset") {
		t.Errorf("a compose file with volumes: %s", text)
	}
	p.shell(map[string]any{"command": []string{"sh", "-c", "cat > compose.yaml"}, "stdin": `services:
  app:
    image: svc-redis
    command: python3 -m http.server 8095 --bind 127.0.0.1 --directory /etc
    ports: ["8095:8095"]
    depends_on: {cache: {condition: service_healthy}}
  cache:
    image: svc-redis
    command: [redis-server, --port, "6394", --bind, 127.0.0.1, --save, ""]
    ports: ["6394"]
    healthcheck: {test: [CMD, redis-cli, -p, "6394", ping], interval: 1s, retries: 30}
`})
	var up tools.WorkspaceServiceResult
	res = p.call("workspace_service", map[string]any{"action": "compose_up"})
	if res.IsError {
		t.Fatalf("compose_up: %s", textOf(res))
	}
	decodeStructured(t, res, &up)
	if len(up.Services) != 2 || up.Services[0].Name != "cache" || up.Services[1].Name != "app" {
		t.Errorf("compose_up's services, in start order: %+v", up.Services)
	}
	if got := redisCall(p, "6394", "PING"); got != "+PONG" {
		t.Errorf("the compose file's cache: %q", got)
	}
	if out := p.run("python3", "-c", "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8095/hostname').status)"); strings.TrimSpace(out.Stdout) != "200" {
		t.Errorf("the compose file's app: %q %q", out.Stdout, out.Stderr)
	}

	// The idle clean-up removes the workspace's container; the services run on.
	workspace := p.container()
	waitUntil(t, 40*time.Second, "the idle workspace's container to go", func() bool { return !containerExists(t, workspace) })
	if !containerExists(t, kv.Container) || !containerExists(t, first.Container) {
		t.Fatalf("the services went with the workspace's container")
	}
	if got := redisCall(p, "6391", "GET k", "INCR n"); got != "kept\n:1" {
		t.Errorf("kv from the workspace's next container: %q", got)
	}
	if got := redisCall(p, "6394", "PING"); got != "+PONG" {
		t.Errorf("the compose file's cache from the workspace's next container: %q", got)
	}
	// So does podman_shell stop.
	if res := p.call("podman_shell", map[string]any{"action": "stop"}); res.IsError {
		t.Fatalf("podman_shell stop: %s", textOf(res))
	}
	if got := redisCall(p, "6391", "INCR n"); got != ":2" {
		t.Errorf("kv after podman_shell stop: %q", got)
	}
	var after tools.WorkspaceServiceResult
	decodeStructured(t, p.call("workspace_service", map[string]any{"action": "list"}), &after)
	for _, v := range after.Services {
		if v.Name == "kv" && v.Container != kv.Container {
			t.Errorf("kv's container was made again: %s, was %s", v.Container, kv.Container)
		}
	}
	p.endSession()
	waitUntil(t, 30*time.Second, "the services to end with the session", func() bool {
		return !containerExists(t, kv.Container) && !containerExists(t, first.Container)
	})
}

// TestAServicesOwnEgress: a service's egress: list is its own, through
// its own proxy (the container still has no network device): it reaches
// the host its list names, not the host only the workspace's --egress
// names, nor any other; and the workspace does not get the service's.
func TestAServicesOwnEgress(t *testing.T) {
	serve := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
		t.Cleanup(srv.Close)
		return srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	}
	serviceHost, workspaceHost := serve("for the service"), serve("for the workspace")
	file := writeServicesProfile(t, "egress.yaml", `profiles:
  svc-egress:
    description: a service with an allowlist of its own
    image: PY_IMAGE
    services:
      fetcher:
        command: [python3, -m, http.server, "8098", --bind, 127.0.0.1]
        ports: [8098]
        ready: {port: 8098}
        egress: ["localhost:${SVC_ALLOWED_PORT}"]
`)
	p := start(t, startOptions{image: pythonImage, env: []string{"SVC_ALLOWED_PORT=" + serviceHost},
		args: []string{"--profiles", file, "--profile", "svc-egress", "--warm", "0", "--egress", "localhost:" + workspaceHost}})
	started, text, failed := p.startService(map[string]any{"name": "fetcher"})
	if failed {
		t.Fatalf("starting the service: %s", text)
	}
	// localhost through the proxy: the host's, where the test's servers listen.
	fetch := `import os, sys, urllib.request, urllib.error
os.environ.pop("no_proxy", None); os.environ.pop("NO_PROXY", None)
try:
    print(urllib.request.urlopen("http://localhost:" + sys.argv[1] + "/", timeout=20).read().decode())
except urllib.error.HTTPError as e:
    print("refused", e.code, e.read().decode()[:300])
`
	inService := func(port string) string {
		out, err := podman(t, "exec", started.Service.Container, "python3", "-c", fetch, port)
		if err != nil {
			t.Errorf("fetching from the service's container: %v %s", err, out)
		}
		return strings.TrimSpace(out)
	}
	if got := inService(serviceHost); got != "for the service" {
		t.Errorf("the service's own host: %q", got)
	}
	if got := inService(workspaceHost); !strings.HasPrefix(got, "refused 403") || !strings.Contains(got, "service fetcher's egress") {
		t.Errorf("the workspace's host from the service: %q; want refused, naming the service's egress", got)
	}
	if got := inService("1"); !strings.HasPrefix(got, "refused 403") {
		t.Errorf("another port from the service: %q", got)
	}
	if got, err := podman(t, "inspect", "--format", "{{.HostConfig.NetworkMode}} {{.HostConfig.CapAdd}}", started.Service.Container); err != nil || strings.TrimSpace(got) != "none []" {
		t.Errorf("the service's container: %q %v; want no network and no capabilities", got, err)
	}
	out := p.run("python3", "-c", fetch, workspaceHost)
	if got := strings.TrimSpace(out.Stdout); got != "for the workspace" {
		t.Errorf("the workspace's own host: %q %q", got, out.Stderr)
	}
	out = p.run("python3", "-c", fetch, serviceHost)
	if got := strings.TrimSpace(out.Stdout); !strings.HasPrefix(got, "refused 403") {
		t.Errorf("the service's host from the workspace: %q; want refused", got)
	}
}

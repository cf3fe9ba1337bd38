package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// servicesProfile installs Redis from Debian's packages, server and
// client, in one profile: the workspace runs redis-cli, its service
// redis-server. The file's path is fixed so that its image, built once,
// is reused by later runs (a profile's image key includes its file).
const servicesProfile = `profiles:
  svc-redis:
    description: Redis from Debian, for services
    image: PY_IMAGE
    setup:
      - apt-get update && apt-get install -y --no-install-recommends redis-server redis-tools && rm -rf /var/lib/apt/lists/*
    egress:
      setup: ["${APT_MIRROR_HOST}"]
    limits: {disk: 96m}
    services:
      declared:
        command: [redis-server, --port, "6390", --bind, 127.0.0.1, --save, ""]
        ports: [6390]
        ready: {port: 6390, timeout: 60s}
  svc-auto:
    description: a workspace whose Redis services start with it
    image: PY_IMAGE
    services:
      kv:
        profile: svc-redis
        command: [redis-server, --port, "6391", --bind, 127.0.0.1, --save, ""]
        ports: [6391]
        ready: {port: 6391, timeout: 60s}
        autostart: true
        depends_on: [first]
      first:
        profile: svc-redis
        command: [redis-server, --port, "6392", --bind, 127.0.0.1, --save, ""]
        ports: [6392]
        ready: {command: [redis-cli, -p, "6392", ping], timeout: 60s}
      broken:
        profile: svc-redis
        command: ["false"]
        ports: [6393]
        ready: {port: 6393, timeout: 20s}
        autostart: true
`

// servicesProfileFile writes servicesProfile at its fixed path.
func servicesProfileFile(t *testing.T) string {
	t.Helper()
	return writeServicesProfile(t, "profiles.yaml", servicesProfile)
}

// writeServicesProfile writes text, its images named, at a fixed path
// anyone may read.
func writeServicesProfile(t *testing.T, name, text string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "wink-mcp-services-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	text = strings.ReplaceAll(text, "PY_IMAGE", pythonImage)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverRSS is the resident memory of p's server, in KiB.
func serverRSS(t *testing.T, p *proc) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("reading the server's memory: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kib, _ := strconv.Atoi(strings.Fields(v)[0])
			return kib
		}
	}
	t.Fatal("no VmRSS in the server's status")
	return 0
}

// startService calls workspace_service start and decodes its result.
func (p *proc) startService(args map[string]any) (tools.WorkspaceServiceResult, string, bool) {
	p.t.Helper()
	args["action"] = "start"
	res := p.call("workspace_service", args)
	var out tools.WorkspaceServiceResult
	if !res.IsError {
		decodeStructured(p.t, res, &out)
	}
	return out, textOf(res), res.IsError
}

// redisService is a Redis service on port, ready when the port answers.
func redisService(name string, port int) map[string]any {
	return map[string]any{"name": name, "profile": "svc-redis", "ports": []int{port}, "ready_port": port,
		"command": []string{"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}}
}

// TestServicesBesideTheWorkspace runs Redis services beside two
// workspaces of one HTTP server: each workspace reaches its own at
// 127.0.0.1:PORT with redis-cli, and never the other's (same name, same
// port); the service's container has the workspace's hardening and no
// network; a service that never becomes ready is reported with its last
// log lines and removed; one that floods its log stays within its disk;
// ports and names outside the workspace are refused; nothing is left
// after the sessions end.
func TestServicesBesideTheWorkspace(t *testing.T) {
	file := servicesProfileFile(t)
	p := start(t, startOptions{transport: "http", image: pythonImage,
		args: []string{"--profiles", file, "--profile", "svc-redis", "--warm", "0"},
		env:  []string{"APT_MIRROR_HOST=" + aptMirrorHost(t)}})
	a, b := p.sibling(nil, ""), p.sibling(nil, "")

	begin := time.Now()
	started, text, failed := a.startService(redisService("cache", 6379))
	if failed {
		t.Fatalf("starting Redis beside workspace a: %s", text)
	}
	t.Logf("Redis service ready in %d ms (%s with the profile's build, if it was not cached)", started.Service.ReadyMS, time.Since(begin))
	if _, text, failed := b.startService(redisService("cache", 6379)); failed {
		t.Fatalf("starting Redis beside workspace b: %s", text)
	}

	// Each workspace reaches its own service, by raw TCP on its loopback.
	out := a.run("sh", "-c", "redis-cli -p 6379 set owner a && redis-cli -p 6379 incr n && redis-cli -p 6379 incr n && redis-cli -h 127.0.0.1 -p 6379 get owner")
	if got := strings.Fields(out.Stdout); strings.Join(got, " ") != "OK 1 2 a" {
		t.Errorf("redis-cli in workspace a: %q %q", out.Stdout, out.Stderr)
	}
	out = b.run("sh", "-c", "redis-cli -p 6379 get owner; redis-cli -p 6379 set owner b; redis-cli -p 6379 get n")
	if got := strings.Fields(out.Stdout); strings.Join(got, " ") != "OK" {
		t.Errorf("workspace b sees a's data, or its own service failed: %q %q", out.Stdout, out.Stderr)
	}
	if out := a.run("redis-cli", "-p", "6379", "get", "owner"); strings.TrimSpace(out.Stdout) != "a" {
		t.Errorf("workspace a's service after b wrote to its own: %q", out.Stdout)
	}

	// The service the profile declares: listed, and started by its name alone.
	if text := b.promptText(); !strings.Contains(text, "(declares services: declared at 127.0.0.1:6390; start one that does not run with `workspace_service` and its name)") {
		t.Errorf("the prompt does not name the declared service:\n%s", text)
	}
	if text := textOf(b.call("workspace_service", map[string]any{"action": "list"})); !strings.Contains(text, "declared (profile svc-redis): declared by the profile, not running") {
		t.Errorf("list before starting the declared service: %s", text)
	}
	if _, text, failed := b.startService(map[string]any{"name": "declared"}); failed {
		t.Errorf("starting the declared service by name: %s", text)
	} else if out := b.run("redis-cli", "-p", "6390", "ping"); strings.TrimSpace(out.Stdout) != "PONG" {
		t.Errorf("redis-cli against the declared service: %q %q", out.Stdout, out.Stderr)
	}
	if _, text, failed := b.startService(map[string]any{"name": "undeclared"}); !failed || !strings.Contains(text, `name: the workspace's profile declares no service "undeclared" (it declares declared)`) {
		t.Errorf("a name alone the profile does not declare: %q", text)
	}
	doctor := exec.Command(winkBin, "doctor", "--profiles", file, "--podman-url", "unix://"+podmanSocket, "--image", pythonImage, "--cache-dir", t.TempDir())
	doctor.Env = append(os.Environ(), "APT_MIRROR_HOST="+aptMirrorHost(t))
	doc, _ := doctor.CombinedOutput()
	if !strings.Contains(string(doc), "services declared (valid, started by workspace_service or, marked, with the workspace): ") ||
		!strings.Contains(string(doc), "svc-auto: kv (svc-redis, ports [6391], starts with the workspace), first (svc-redis, ports [6392])") ||
		!strings.Contains(string(doc), "svc-redis: declared (svc-redis, ports [6390])") {
		t.Errorf("doctor does not list the declared service:\n%s", doc)
	}

	// A small test suite against the service, in Python over a raw socket.
	suite := `import socket, sys
def cmd(*args):
    s = socket.create_connection(("127.0.0.1", 6379), timeout=5)
    s.sendall(("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)).encode())
    r = s.recv(4096).decode(); s.close(); return r
assert cmd("PING") == "+PONG\r\n", cmd("PING")
assert cmd("RPUSH", "q", "x") == ":1\r\n"
assert cmd("LPOP", "q") == "$1\r\nx\r\n"
print("suite passed")
`
	if out := a.shell(map[string]any{"command": []string{"python3", "-c", suite}}); strings.TrimSpace(out.Stdout) != "suite passed" {
		t.Errorf("the test suite against the service: %q %q", out.Stdout, out.Stderr)
	}

	// The service's container: the workspace's hardening, no network.
	svc := started.Service.Container
	got, err := podman(t, "inspect", "--format", "{{.HostConfig.NetworkMode}} {{.HostConfig.CapAdd}} {{.Config.User}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{index .Config.Labels \"io.wink-mcp.service-of\"}}", svc)
	fields := strings.Fields(got)
	if err != nil || len(fields) != 6 || fields[0] != "none" || fields[1] != "[]" || strings.HasPrefix(fields[2], "0:") || fields[2] == "" ||
		fields[3] == "0" || fields[4] == "0" || fields[5] == "" {
		t.Errorf("service container %s: %q %v; want network none, no capabilities, a non-root user, limits, the service label", svc, got, err)
	}
	if caps, _ := podman(t, "exec", svc, "grep", "CapEff", "/proc/1/status"); !strings.Contains(caps, "0000000000000000") {
		t.Errorf("service's effective capabilities: %q", caps)
	}
	if links, _ := podman(t, "exec", svc, "ls", "/sys/class/net"); strings.TrimSpace(links) != "lo" {
		t.Errorf("service's network devices: %q; want only lo", links)
	}

	// What the model may not open: ports outside the range, the proxy's
	// port, a name that is no service, a port the service did not declare.
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"name": "ssh", "profile": "svc-redis", "command": []string{"true"}, "ports": []int{22}}, "ports[0]: 22 is outside 1024-65535"},
		{map[string]any{"name": "proxy", "profile": "svc-redis", "command": []string{"true"}, "ports": []int{3128}}, "egress proxy port"},
		{map[string]any{"name": "dup", "profile": "svc-redis", "command": []string{"true"}, "ports": []int{6379}, "ready_port": 6379}, "ports: 6379 is already service cache's port"},
		{map[string]any{"name": "Bad_Name", "profile": "svc-redis", "command": []string{"true"}, "ports": []int{7000}, "ready_port": 7000}, "name: \"Bad_Name\" is not a service name"},
		{map[string]any{"name": "nope", "profile": "no-such", "command": []string{"true"}, "ports": []int{7000}, "ready_port": 7000}, "profile: profile \"no-such\" does not exist"},
		{map[string]any{"name": "x", "profile": "svc-redis", "command": []string{"true"}, "ports": []int{7000}, "ready_port": 7001}, "ready.port: 7001 is not one of the service's ports"},
		{map[string]any{"name": "x", "profile": "svc-redis", "command": []string{"true"}, "ports": []int{7000}, "host": "10.0.0.1"}, "host"},
	} {
		if _, text, failed := a.startService(c.args); !failed || !strings.Contains(text, c.want) {
			t.Errorf("start %v: %q; want a tool error with %q", c.args, text, c.want)
		}
	}
	// A forged request from the address the agent's forwarder uses takes
	// the tunnel's streams, where the server's router refuses each; from
	// any other address the agent hands the connection to the proxy,
	// which refuses it as no HTTP. Either way nothing is reached.
	forged := `import socket
for src in ["127.0.0.2", "127.0.0.1"]:
    for line in ["wink-service cache 6380\n", "wink-service other 6379\n", "wink-service ../cache 6379\n", "wink-service cache 6379\n"]:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=5, source_address=(src, 0))
        s.sendall(line.encode()); print(src, repr(s.recv(200).decode())); s.close()
`
	out = a.shell(map[string]any{"command": []string{"python3", "-c", forged}})
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	if len(lines) != 8 || !strings.Contains(lines[0], "serves ports [6379], not 6380") || !strings.Contains(lines[1], `no such service "other"`) ||
		!strings.Contains(lines[2], "no such service") || !strings.Contains(lines[3], "'ok\\n'") {
		t.Errorf("service requests from the forwarder's address: %q %q; want the three forged refused, the fourth served", out.Stdout, out.Stderr)
	}
	for _, line := range lines[min(4, len(lines)):] {
		if !strings.HasPrefix(line, "127.0.0.1 ") || strings.Contains(line, "'ok") {
			t.Errorf("a service request from another address reached something: %q", line)
		}
	}

	// A service that never becomes ready is reported, with its log, and removed.
	begin = time.Now()
	_, text, failed = a.startService(map[string]any{"name": "never", "profile": "svc-redis", "ports": []int{7000}, "ready_port": 7000,
		"ready_timeout_seconds": 3, "command": []string{"sh", "-c", "echo warming-up-forever; sleep 600"}})
	if !failed || !strings.Contains(text, "was not ready (port 7000 accepting a connection) within 3s") || !strings.Contains(text, "warming-up-forever") {
		t.Errorf("a service that never becomes ready: %q", text)
	}
	if took := time.Since(begin); took > 90*time.Second {
		t.Errorf("the refusal of a service that never became ready took %s", took)
	}
	_, text, failed = a.startService(map[string]any{"name": "crash", "profile": "svc-redis", "ports": []int{7000}, "ready_port": 7000,
		"command": []string{"sh", "-c", "echo bad config >&2; exit 3"}})
	if !failed || !strings.Contains(text, "ended (exit code 3) before it was ready") || !strings.Contains(text, "bad config") {
		t.Errorf("a service whose command fails: %q", text)
	}

	// A service that floods its log: bounded by its own disk, the workspace
	// unharmed, its pages bounded, and the server's memory flat.
	rssBefore := serverRSS(t, p)
	if _, text, failed := a.startService(map[string]any{"name": "flood", "profile": "svc-redis", "ports": []int{7001}, "ready_port": 7001,
		"command": []string{"sh", "-c", "yes flood-line-of-some-length-to-fill-the-disk & exec python3 -m http.server 7001 --bind 127.0.0.1"}}); failed {
		t.Fatalf("starting the flooding service: %s", text)
	}
	var logs tools.WorkspaceServiceResult
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res := a.call("workspace_service", map[string]any{"action": "logs", "name": "flood", "limit": 64})
		if res.IsError {
			t.Fatalf("logs: %s", textOf(res))
		}
		decodeStructured(t, res, &logs)
		if logs.Dropped > 0 {
			break
		}
		time.Sleep(time.Second)
	}
	if logs.Dropped == 0 || logs.Total > 96<<20 || !strings.HasPrefix(logs.Data, "flood-line") {
		t.Errorf("flooding service's log: total %d, dropped %d, page %q; want it bounded by its 96 MB disk", logs.Total, logs.Dropped, logs.Data)
	}
	for _, offset := range []int64{0, logs.Total / 2, max(0, logs.Total-(1<<20))} { // pages back through all of it
		var page tools.WorkspaceServiceResult
		decodeStructured(t, a.call("workspace_service", map[string]any{"action": "logs", "name": "flood", "offset": offset, "limit": 1 << 20}), &page)
		if len(page.Data) > 1<<20 || page.Offset != offset || page.Next <= offset {
			t.Errorf("a 1 MiB page from %d: %d bytes, %d-%d", offset, len(page.Data), page.Offset, page.Next)
		}
	}
	grew := serverRSS(t, p) - rssBefore
	t.Logf("the server's resident memory grew by %d KiB while a service wrote %d bytes of log (%d dropped) and three 1 MiB pages were read", grew, logs.Total, logs.Dropped)
	if grew > 64<<10 {
		t.Errorf("the server's memory grew by %d KiB while a service flooded %d bytes of log and three 1 MiB pages were read", grew, logs.Total)
	}
	if out := a.run("sh", "-c", "echo fine > f && cat f && redis-cli -p 6379 get owner"); strings.Join(strings.Fields(out.Stdout), " ") != "fine a" {
		t.Errorf("workspace a beside the flooding service: %q %q", out.Stdout, out.Stderr)
	}
	res := a.call("workspace_service", map[string]any{"action": "list"})
	if text := textOf(res); res.IsError || !strings.Contains(text, "cache (profile svc-redis): running, at 127.0.0.1:6379") || !strings.Contains(text, "flood") {
		t.Errorf("list: %s", text)
	}
	if res := a.call("workspace_service", map[string]any{"action": "stop", "name": "flood"}); res.IsError {
		t.Errorf("stop: %s", textOf(res))
	}
	if res := a.call("workspace_service", map[string]any{"action": "logs", "name": "flood"}); !res.IsError || !strings.Contains(textOf(res), "no such service \"flood\": the workspace has cache") {
		t.Errorf("logs of a stopped service: %s", textOf(res))
	}

	// The services end with their sessions: nothing is left.
	a.endSession()
	b.endSession()
	deadline = time.Now().Add(30 * time.Second)
	for {
		left, err := podman(t, "ps", "-a", "--filter", "label=io.wink-mcp.service-of", "--filter", "name="+p.prefix, "--format", "{{.Names}}")
		if err == nil && strings.TrimSpace(left) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service containers left after the sessions ended: %q %v", left, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestServicesCountInQuotasAndGoWithADeadServer: a service's container
// counts in its principal's --quota-memory like a workspace's (a second
// service past it is refused, naming the quota); stopping one gives its
// share back; and when the server is killed, the next server's orphan
// sweep removes the services' containers with the workspace's.
func TestServicesCountInQuotasAndGoWithADeadServer(t *testing.T) {
	file := servicesProfileFile(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := startOptions{transport: "http", image: pythonImage, env: []string{"APT_MIRROR_HOST=" + aptMirrorHost(t)},
		args: []string{"--profiles", file, "--profile", "svc-redis", "--warm", "0", "--auth-token-file", tokenFile,
			"--memory", "256m", "--quota-memory", "512m"}}
	p := launch(t, opts)
	p.connect(map[string]string{"Authorization": "Bearer " + testToken})
	workspace := p.container()
	first, text, failed := p.startService(redisService("one", 6379))
	if failed {
		t.Fatalf("the first service, within the quota: %s", text)
	}
	if _, text, failed := p.startService(redisService("two", 6380)); !failed || !strings.Contains(text, "memory quota") || !strings.Contains(text, "--quota-memory") {
		t.Errorf("a service past the principal's memory quota: %q; want the quota's refusal", text)
	}
	if res := p.call("workspace_service", map[string]any{"action": "stop", "name": "one"}); res.IsError {
		t.Fatalf("stop: %s", textOf(res))
	}
	if containerExists(t, first.Service.Container) {
		t.Errorf("service container %s still exists after stop", first.Service.Container)
	}
	second, text, failed := p.startService(redisService("two", 6380))
	if failed {
		t.Fatalf("a service once the first gave its share back: %s", text)
	}
	if out := p.run("redis-cli", "-p", "6380", "ping"); strings.TrimSpace(out.Stdout) != "PONG" {
		t.Errorf("redis-cli against the second service: %q %q", out.Stdout, out.Stderr)
	}

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
	opts.cache = p.cache
	next := launch(t, opts)
	next.waitLog(30*time.Second, "orphan sweep done", nil)
	for _, name := range []string{workspace, second.Service.Container} {
		if containerExists(t, name) {
			t.Errorf("%s survived the dead server's sweep", name)
		}
	}
}

// TestRootlessServices: under rootless Podman a Redis service runs beside
// the workspace (a profile without a disk limit, which rootless Podman
// cannot mount), the workspace reaches it, the service has no network
// device, and nothing is left once the session ends.
func TestRootlessServices(t *testing.T) {
	u := needRootless(t)
	text := strings.Replace(servicesProfile, "    limits: {disk: 96m}\n", "", 1)
	file := writeServicesProfile(t, "rootless.yaml", text)
	// Over HTTP: a stdio client kills its server 5 s after closing its
	// input, less than two rootless removals take on a loaded machine.
	p := start(t, startOptions{transport: "http", as: u, image: pythonImage, env: append(u.shellEnv(t), "APT_MIRROR_HOST="+aptMirrorHost(t)),
		args: append([]string{"--profiles", file, "--profile", "svc-redis"}, rootlessArgs...)})
	svc := redisService("cache", 6379)
	svc["user"] = "redis" // the image's own user, which Debian's package made
	started, text, failed := p.startService(svc)
	if failed {
		t.Fatalf("starting Redis under rootless Podman: %s", text)
	}
	if got, err := u.podman("exec", started.Service.Container, "sh", "-c", "id -un; grep CapEff /proc/self/status"); err != nil ||
		strings.Join(strings.Fields(got), " ") != "redis CapEff: 0000000000000000" {
		t.Errorf("rootless service's user and capabilities: %q %v; want redis and none", got, err)
	}
	if out := p.run("sh", "-c", "redis-cli -p 6379 set k rootless && redis-cli -p 6379 get k"); strings.Join(strings.Fields(out.Stdout), " ") != "OK rootless" {
		t.Errorf("redis-cli under rootless Podman: %q %q", out.Stdout, out.Stderr)
	}
	if got, err := u.podman("inspect", "--format", "{{.HostConfig.NetworkMode}} {{.HostConfig.CapAdd}}", started.Service.Container); err != nil || strings.TrimSpace(got) != "none []" {
		t.Errorf("rootless service container: %q %v; want no network and no capabilities", got, err)
	}
	p.endSession()
	waitUntil(t, 90*time.Second, "the workspace's and its service's containers to go", func() bool { return len(u.containersNamed(t, p.prefix)) == 0 })
}

// TestAServiceWhoseContainerWentIsNotMadeAgain: a service's container
// removed from outside is reported gone (a connection to it fails, list
// says why), never made again empty behind the model's back; stop then
// cleans up and the name can be started again.
func TestAServiceWhoseContainerWentIsNotMadeAgain(t *testing.T) {
	file := servicesProfileFile(t)
	p := start(t, startOptions{image: pythonImage, env: []string{"APT_MIRROR_HOST=" + aptMirrorHost(t)},
		args: []string{"--profiles", file, "--profile", "svc-redis", "--warm", "0"}})
	started, text, failed := p.startService(redisService("cache", 6379))
	if failed {
		t.Fatalf("starting Redis: %s", text)
	}
	if out, err := podman(t, "rm", "-f", "-t", "0", started.Service.Container); err != nil {
		t.Fatalf("removing the service's container: %v %s", err, out)
	}
	if out := p.run("sh", "-c", "timeout 20 redis-cli -p 6379 ping; echo exit=$?"); strings.Contains(out.Stdout, "PONG") {
		t.Errorf("a removed service answered: %q", out.Stdout)
	}
	res := p.call("workspace_service", map[string]any{"action": "list"})
	if text := textOf(res); !strings.Contains(text, "cache (profile svc-redis): not running: the service's container is gone") {
		t.Errorf("list after the service's container went: %s", text)
	}
	if containerExists(t, started.Service.Container) {
		t.Errorf("the service's container %s was made again", started.Service.Container)
	}
	if res := p.call("workspace_service", map[string]any{"action": "stop", "name": "cache"}); res.IsError {
		t.Errorf("stop of a gone service: %s", textOf(res))
	}
	if _, text, failed := p.startService(redisService("cache", 6379)); failed {
		t.Errorf("starting the name again: %s", text)
	} else if out := p.run("redis-cli", "-p", "6379", "ping"); strings.TrimSpace(out.Stdout) != "PONG" {
		t.Errorf("the new service: %q %q", out.Stdout, out.Stderr)
	}
}

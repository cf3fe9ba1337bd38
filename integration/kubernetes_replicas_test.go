package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"k8s.io/client-go/kubernetes"

	"github.com/wink-mcp/wink-mcp/tools"
)

// replica is one wink-mcp process of TestKubernetesReplicas, its Pods
// named prefix-...
type replica struct {
	p      *proc
	prefix string
	cache  string
}

// launchReplica starts wink-mcp over streamable HTTP with --engine
// kubernetes, no warm pool, and the bearer token in tokenFile, without a
// client of its own: its clients come through the proxy.
func launchReplica(t *testing.T, cs *kubernetes.Clientset, prefix, cache, tokenFile string, extra ...string) *replica {
	t.Helper()
	image := kubernetesAgentImage(t)
	t.Cleanup(func() { deletePods(cs, prefix) })
	p := launch(t, startOptions{transport: "http", image: pythonImage, cache: cache, serviceFromEnv: true, args: append([]string{
		"--engine", "kubernetes", "--kubeconfig", clusterKubeconfig, "--kubernetes-agent-image", image, "--namespace", testNamespace,
		"--allow-unenforced-network-policy", "--name-prefix", prefix, "--disk-limit", "1g", "--warm", "0",
		"--auth-token-file", tokenFile}, extra...)})
	return &replica{p: p, prefix: prefix, cache: cache}
}

// addr is the host:port the replica listens on.
func (r *replica) addr() string {
	return strings.TrimSuffix(strings.TrimPrefix(r.p.url, "http://"), "/mcp")
}

// startHAProxy runs Debian's HAProxy on a free loopback port in front of
// the replicas: a new session goes round robin, and every later request of
// it to the replica whose answer carried its Mcp-Session-Id. It checks
// each replica's /healthz every 500 ms. It returns the proxy's /mcp URL;
// the process is killed at cleanup.
func startHAProxy(t *testing.T, replicas ...*replica) string {
	t.Helper()
	return startHAProxyBalancing(t, "roundrobin", replicas...)
}

// documentedBalance is how docs/kubernetes.md tells an operator to balance:
// a 2026-07-28 call by a consistent hash of its Mcp-Param-Workspace header
// (a handle's calls reach one replica while it lives), round robin for a
// request without it (workspace_open, a new 2025 session).
const documentedBalance = "hdr(Mcp-Param-Workspace)\n    hash-type consistent"

// startHAProxyBalancing is startHAProxy with balance as the backend's
// balance algorithm (and what follows it).
func startHAProxyBalancing(t *testing.T, balance string, replicas ...*replica) string {
	t.Helper()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and HAProxy is missing (%v); make cluster installs it", err)
		}
		t.Skipf("HAProxy is missing (%v); make cluster installs it", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var servers strings.Builder
	for i, r := range replicas {
		fmt.Fprintf(&servers, "    server replica%d %s check inter 500ms fall 2 rise 1\n", i, r.addr())
	}
	config := fmt.Sprintf(`global
    maxconn 512
defaults
    mode http
    timeout connect 5s
    timeout client 5m
    timeout server 5m
    retries 2
    option redispatch
frontend mcp
    bind %s
    default_backend replicas
backend replicas
    balance %s
    option httpchk GET /healthz
    http-check expect status 200
    stick-table type string len 128 size 100k expire 30m
    stick store-response res.hdr(mcp-session-id)
    stick match req.hdr(mcp-session-id)
%s`, addr, balance, servers.String())
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxy, "-c", "-q", "-f", file).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v: %s\n%s", err, out, config)
	}
	logs := &logBuffer{}
	cmd := exec.Command(haproxy, "-db", "-f", file)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy:\n%s", logs.String())
		}
	})
	waitUntil(t, 10*time.Second, "HAProxy to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr + "/mcp"
}

// viaProxy opens a session through the proxy at url, sending the token.
func viaProxy(t *testing.T, url, token string) *proc {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, withToken(token, http.DefaultTransport))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, transport: "http", url: url, client: client.NewClient(tr), logs: &logBuffer{}, exited: make(chan struct{})}
	p.initialize()
	t.Cleanup(func() {
		if p.client != nil {
			p.client.Close()
		}
	})
	return p
}

// withToken gives a streamable HTTP client an HTTP client that sends the
// bearer token with every request, the DELETE that ends a session
// included: mcp-go v1.2.1's Close sends that DELETE without the headers of
// WithHTTPHeaders, so a server that asks for a token refuses it (401) and
// the session, and its Pod, live on until --idle-timeout.
func withToken(token string, next http.RoundTripper) transport.StreamableHTTPCOption {
	return transport.WithHTTPBasicClient(&http.Client{Transport: bearer{token: token, next: next}})
}

// bearer is an http.RoundTripper adding an Authorization header.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// servedBy returns the replica whose Pod the session's workspace is.
func servedBy(t *testing.T, pod string, replicas ...*replica) *replica {
	t.Helper()
	for _, r := range replicas {
		if strings.HasPrefix(pod, r.prefix+"-") {
			return r
		}
	}
	t.Fatalf("the workspace Pod %s belongs to no replica", pod)
	return nil
}

// TestKubernetesReplicas serves one endpoint with two wink-mcp replicas
// (--engine kubernetes, their own cache directories, one token) behind a
// real HAProxy that sticks a session to its replica on Mcp-Session-Id:
// a session's calls all reach one replica and every tool works through the
// proxy; 20 sessions at once all succeed, spread over both replicas; a
// replica killed mid-session fails that session's next call cleanly, the
// survivor serves new sessions, and the dead replica's Pods are removed;
// no Pod is left at the end.
func TestKubernetesReplicas(t *testing.T) {
	cs, _ := needCluster(t)
	base := "wk" + randomHex(4)
	token := randomHex(16)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	replicas := []*replica{
		launchReplica(t, cs, base+"a", t.TempDir(), tokenFile),
		launchReplica(t, cs, base+"b", t.TempDir(), tokenFile),
	}
	url := startHAProxy(t, replicas...)

	// One session: all its calls reach one replica, every tool works.
	{
		p := viaProxy(t, url, token)
		home := p.container()
		fileToolsScenario(t, p)
		started := p.shell(map[string]any{"command": []string{"sh", "-c", "echo from the job"}, "background": true})
		if j := p.waitJob(started.Job, 30*time.Second); *j.ExitCode != 0 {
			t.Errorf("background job: %+v", j)
		}
		if again := p.run("true").Container; again != home {
			t.Errorf("the session's workspace was %s, now %s: its calls reached another replica", home, again)
		}
		servedBy(t, home, replicas...)
		p.endSession()
	}
	// A request that reached the replica not holding its session would be
	// refused there as an unknown session.
	for _, r := range replicas {
		if rec := r.p.logs.find("http request refused", nil); rec != nil {
			t.Errorf("replica %s refused a request: %v", r.prefix, rec)
		}
	}

	begin := time.Now()
	served := twentySessions(t, url, token, replicas)
	took := time.Since(begin)
	for _, r := range replicas {
		if served[r.prefix] == 0 {
			t.Errorf("replica %s served none of the 20 sessions at once: %v", r.prefix, served)
		}
	}
	t.Logf("20 sessions at once, per replica: %v, all done in %v", served, took.Round(100*time.Millisecond))

	replicas = killOneMidSession(t, cs, url, token, tokenFile, replicas)
	for _, r := range replicas {
		if err := r.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r.p.waitExit(60 * time.Second)
	}
	for _, r := range replicas {
		if pods := podsNamed(t, cs, r.prefix); len(pods) > 0 {
			t.Errorf("%d Pods of replica %s are left, %s first", len(pods), r.prefix, pods[0].Name)
		}
	}
}

// killOneMidSession SIGKILLs the replica serving a session: the session's
// next call fails cleanly, a new session goes to the survivor, and the
// dead replica's Pods are removed. It returns the replicas then serving:
// the survivor and the killed one restarted.
func killOneMidSession(t *testing.T, cs *kubernetes.Clientset, url, token, tokenFile string, replicas []*replica) []*replica {
	t.Helper()
	p := viaProxy(t, url, token)
	p.tool("write_file", map[string]any{"file_path": "kept.txt", "content": "before the kill\n"}, &tools.WriteFileResult{})
	dead := servedBy(t, p.container(), replicas...)
	survivor := replicas[0]
	if survivor == dead {
		survivor = replicas[1]
	}
	left := podsNamed(t, cs, dead.prefix)
	if len(left) == 0 {
		t.Fatalf("the replica %s serving a session has no Pod", dead.prefix)
	}
	if err := dead.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	dead.p.waitExit(10 * time.Second)

	// The next call fails with an HTTP or MCP error, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	res, err := p.client.CallTool(ctx, shellRequest("cat", "kept.txt"))
	failed := time.Since(begin)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("the call after the kill hung: %v", err)
	case err == nil && !res.IsError:
		t.Fatalf("the call after its replica was killed succeeded: %s", textOf(res))
	}
	t.Logf("the call after the kill failed in %v: %v", failed.Round(time.Millisecond), errOrText(err, res))

	next := viaProxy(t, url, token)
	if r := servedBy(t, next.container(), replicas...); r != survivor {
		t.Errorf("a new session went to the killed replica %s", r.prefix)
	}
	fileToolsScenario(t, next)
	next.endSession()

	// The dead replica's Pods go: swept by it once restarted on its cache
	// directory, or by the survivor where liveness is held in the cluster,
	// whichever comes first. The restarted one listens on a new port the
	// proxy does not know: it is here to sweep, and ends with the rest.
	restarted := launchReplica(t, cs, dead.prefix, dead.cache, tokenFile)
	begin = time.Now()
	waitUntil(t, 60*time.Second, "the killed replica's Pods to go", func() bool {
		for _, pod := range podsNamed(t, cs, dead.prefix) {
			for _, old := range left {
				if pod.Name == old.Name {
					return false
				}
			}
		}
		return true
	})
	t.Logf("the killed replica's Pods gone %v after its restart", time.Since(begin).Round(100*time.Millisecond))
	return []*replica{survivor, restarted}
}

// twentySessions opens 20 sessions at once through the proxy at url, each
// writing and reading its own file and running a command, and returns how
// many each replica served, by its Pods' prefix.
func twentySessions(t *testing.T, url, token string, replicas []*replica) map[string]int {
	t.Helper()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		served = map[string]int{}
	)
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			pod, err := oneSession(url, token, i)
			if err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
				return
			}
			for _, r := range replicas {
				if strings.HasPrefix(pod, r.prefix+"-") {
					mu.Lock()
					served[r.prefix]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return served
}

// oneSession is one of twentySessions' clients: ownFileRound through
// the proxy, then DELETE. It returns its workspace Pod.
func oneSession(url, token string, i int) (string, error) {
	c, err := client.NewStreamableHttpClient(url, withToken(token, http.DefaultTransport))
	if err != nil {
		return "", err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return ownFileRound(ctx, c, "replicas", i)
}

// errOrText renders a failed call: its Go error or its tool error's text.
func errOrText(err error, res *mcp.CallToolResult) string {
	if err != nil {
		return err.Error()
	}
	return textOf(res)
}

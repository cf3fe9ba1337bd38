package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// transports are the transports every scenario runs over.
var transports = []string{"stdio", "http", "sse"}

// eachTransport runs a scenario once over each transport.
func eachTransport(t *testing.T, scenario func(t *testing.T, transport string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { scenario(t, tr) })
	}
}

// proc is one wink-mcp process under test and an MCP client driving it.
type proc struct {
	t         *testing.T
	transport string
	client    *client.Client
	cmd       *exec.Cmd
	logs      *logBuffer
	prefix    string // container name prefix, unique to this process
	cache     string
	url       string // the HTTP endpoint, for sse and http
	exited    chan struct{}
	as        *rootlessUser // the user the server runs as, when not root
	remote    *remoteHost   // the Podman host driven over ssh, when not this one
	elicit    client.ElicitationHandler
	protocol  string
	// instructions are what the server's initialize answered with.
	instructions string
}

type startOptions struct {
	transport string // stdio (the default), http or sse
	cache     string
	image     string
	args      []string
	headers   map[string]string         // sent with every HTTP request
	roots     []string                  // stdio only: the client declares these folders as its roots
	as        *rootlessUser             // run the server as this user, against its rootless Podman
	remote    *remoteHost               // drive this Podman host over ssh instead of this machine's
	elicit    client.ElicitationHandler // answers the server's questions to the user; nil: the client cannot be asked
	protocol  string                    // the protocol revision the client asks for; "" for 2025-11-25, the newest with sessions
	env       []string                  // added to the server's environment ("NAME=value")
	hosts     string                    // the server reads this file as its /etc/hosts (in a mount namespace of its own: pass --disk-limit 0, whose mounts Podman would not see)
	// serviceFromEnv passes no --podman-url (nor the remote's key): the
	// server chooses the Podman service from its environment.
	serviceFromEnv bool
}

// rootsList answers the server's roots/list with fixed folders.
type rootsList []string

func (r rootsList) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	res := &mcp.ListRootsResult{Roots: []mcp.Root{}}
	for _, dir := range r {
		res.Roots = append(res.Roots, mcp.Root{URI: "file://" + dir, Name: filepath.Base(dir)})
	}
	return res, nil
}

// start launches wink-mcp, connects a client and initializes a session.
// Containers it leaves behind are removed at cleanup, so one failing test
// does not disturb the next; tests that check for leaks look before that.
func start(t *testing.T, opts startOptions) *proc {
	t.Helper()
	p := launch(t, opts)
	p.connect(opts.headers)
	return p
}

// launch starts the wink-mcp process without connecting, except over stdio
// where the client owns the process.
func launch(t *testing.T, opts startOptions) *proc {
	t.Helper()
	if opts.cache == "" {
		opts.cache = t.TempDir()
		if opts.as != nil {
			opts.cache = opts.as.dir(t)
		}
	}
	if opts.image == "" {
		opts.image = testImage
	}
	if opts.transport == "" {
		opts.transport = "stdio"
	}
	p := &proc{t: t, transport: opts.transport, logs: &logBuffer{}, prefix: "wt" + randomHex(4), cache: opts.cache, exited: make(chan struct{}), as: opts.as, remote: opts.remote,
		elicit: opts.elicit, protocol: opts.protocol}
	bin, url := winkBin, "unix://"+podmanSocket
	if opts.as != nil {
		bin, url = opts.as.bin, "unix://"+opts.as.socket
	}
	if opts.remote != nil {
		url = opts.remote.url
	}
	args := []string{
		"--transport", opts.transport, "--addr", "127.0.0.1:0",
		"--image", opts.image, "--cache-dir", opts.cache, "--name-prefix", p.prefix,
		"--log-format", "json", "--log-level", "debug",
	}
	if !opts.serviceFromEnv {
		args = append(args, "--podman-url", url)
	}
	if opts.remote != nil && !opts.serviceFromEnv {
		args = append(args, "--podman-identity", opts.remote.key)
	}
	args = append(args, opts.args...)
	if opts.hosts != "" {
		// The server resolves names as the test says, and nothing else on the
		// machine sees it: /etc/hosts is replaced in its own mount namespace.
		args = append([]string{"--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, opts.hosts, bin}, args...)
		bin = "unshare"
	}
	t.Cleanup(func() {
		if p.client != nil {
			p.client.Close()
		}
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(20 * time.Second):
				_ = p.cmd.Process.Kill()
			}
		}
		switch {
		case p.as != nil:
			p.as.removeContainers(t, p.prefix)
		case p.remote != nil:
			p.remote.removeAll(t, p.prefix)
		default:
			removeContainers(t, p.prefix)
		}
		if t.Failed() {
			t.Logf("wink-mcp log:\n%s", p.logs.String())
		}
	})
	if opts.transport == "stdio" {
		commandFunc := func(_ context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			p.cmd = exec.Command(command, args...)
			p.cmd.Env = append(append(os.Environ(), env...), opts.env...)
			if p.as != nil {
				p.as.apply(p.cmd, opts.env...)
			}
			return p.cmd, nil
		}
		tr := transport.NewStdioWithOptions(bin, nil, args,
			transport.WithCommandFunc(commandFunc), transport.WithCommandStderrWriter(p.logs))
		if err := tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		var clientOpts []client.ClientOption
		if opts.roots != nil {
			clientOpts = append(clientOpts, client.WithRootsHandler(rootsList(opts.roots)))
		}
		if opts.elicit != nil {
			clientOpts = append(clientOpts, client.WithElicitationHandler(opts.elicit))
		}
		p.client = client.NewClient(tr, clientOpts...)
		go func() {
			// The transport owns cmd.Wait; watch /proc instead of racing it.
			for processAlive(p.cmd.Process.Pid) {
				time.Sleep(20 * time.Millisecond)
			}
			close(p.exited)
		}()
		return p
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), opts.env...)
	p.cmd.Stderr = p.logs
	if p.as != nil {
		p.as.apply(p.cmd, opts.env...)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-p.exited:
		t.Fatalf("wink-mcp exited at start:\n%s", p.logs.String())
	default:
	}
	rec := p.waitLog(15*time.Second, "serving MCP over HTTP", nil)
	p.url = rec["url"].(string)
	return p
}

// connect makes (for sse and http) a client, and initializes its session.
func (p *proc) connect(headers map[string]string) {
	p.t.Helper()
	switch p.transport {
	case "http":
		tr, err := transport.NewStreamableHTTP(p.url, transport.WithHTTPHeaders(headers))
		if err != nil {
			p.t.Fatal(err)
		}
		var opts []client.ClientOption
		if p.elicit != nil {
			opts = append(opts, client.WithElicitationHandler(p.elicit))
		}
		p.client = client.NewClient(tr, opts...)
	case "sse":
		c, err := client.NewSSEMCPClient(p.url, transport.WithHeaders(headers))
		if err != nil {
			p.t.Fatal(err)
		}
		p.client = c
	}
	p.initialize()
}

// initialize starts p's client and initializes its session.
func (p *proc) initialize() {
	p.t.Helper()
	// The SSE client's event stream lives as long as the context Start gets.
	if err := p.client.Start(context.Background()); err != nil {
		p.t.Fatalf("starting the client: %v\n%s", err, p.logs.String())
	}
	var req mcp.InitializeRequest
	// The newest revision with sessions, which these tests drive; the
	// sessionless 2026-07-28 (workspace handles) has its own tests.
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	if p.protocol != "" {
		req.Params.ProtocolVersion = p.protocol
	}
	req.Params.ClientInfo = mcp.Implementation{Name: "wink-integration", Version: "0"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.client.Initialize(ctx, req)
	if err != nil {
		p.t.Fatalf("initialize: %v\n%s", err, p.logs.String())
	}
	p.instructions = res.Instructions
}

// call invokes a tool and returns its result, failing on protocol errors.
func (p *proc) call(name string, args map[string]any) *mcp.CallToolResult {
	p.t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := p.client.CallTool(ctx, req)
	if err != nil {
		p.t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// promptText returns the text of the workspace prompt.
func (p *proc) promptText() string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prompt, err := p.client.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "podman_workspace"}})
	if err != nil {
		p.t.Fatal(err)
	}
	return prompt.Messages[0].Content.(mcp.TextContent).Text
}

// shellRequest is a podman_shell call with only a command.
func shellRequest(argv ...string) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = "podman_shell"
	req.Params.Arguments = map[string]any{"command": argv}
	return req
}

// shell runs podman_shell and decodes its result; a tool error fails the test.
func (p *proc) shell(args map[string]any) tools.ShellResult {
	p.t.Helper()
	res := p.call("podman_shell", args)
	if res.IsError {
		p.t.Fatalf("podman_shell %v failed: %s", args, textOf(res))
	}
	var out tools.ShellResult
	decodeStructured(p.t, res, &out)
	return out
}

// run is shell with only a command.
func (p *proc) run(argv ...string) tools.ShellResult {
	p.t.Helper()
	return p.shell(map[string]any{"command": argv})
}

// container makes sure the session's container runs and returns its name.
func (p *proc) container() string {
	p.t.Helper()
	return p.shell(map[string]any{"action": "start"}).Container
}

// endSession ends the session the way its client does: closing stdin
// (after which a stdio server exits), DELETE (http), or disconnecting (sse).
func (p *proc) endSession() {
	p.t.Helper()
	if err := p.client.Close(); err != nil {
		p.t.Logf("closing client: %v", err)
	}
	p.client = nil
	if p.transport != "stdio" {
		return
	}
	p.waitExit(20 * time.Second)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		p.t.Errorf("wink-mcp exited with %d after stdin closed", code)
	}
}

func (p *proc) waitExit(within time.Duration) {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		p.t.Fatalf("wink-mcp did not exit within %s", within)
	}
}

// waitLog waits for a log record with this message (and these attributes).
func (p *proc) waitLog(within time.Duration, msg string, attrs map[string]any) map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if rec := p.logs.find(msg, attrs); rec != nil {
			return rec
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no log record %q %v within %s", msg, attrs, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func decodeStructured(t *testing.T, res *mcp.CallToolResult, into any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// podman runs the podman CLI and returns its trimmed output.
func podman(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("podman", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func containerExists(t *testing.T, name string) bool {
	t.Helper()
	return exec.Command("podman", "container", "exists", name).Run() == nil
}

// containersNamed lists the containers whose names start with prefix.
func containersNamed(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := podman(t, "ps", "-a", "--filter", "name=^"+prefix+"-", "--format", "{{.Names}}")
	if err != nil {
		t.Fatalf("podman ps: %v: %s", err, out)
	}
	if out == "" {
		return nil
	}
	return strings.Fields(out)
}

func removeContainers(t *testing.T, prefix string) {
	for _, name := range containersNamed(t, prefix) {
		_, _ = podman(t, "rm", "-f", "-t", "0", name)
	}
}

// waitUntil polls cond until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unpooled turns the HTTP transports' default pool of containers off, for
// tests that count a session's containers or directories by prefix: pooled
// ones waiting for a session would be counted too. pool_test.go tests the pool.
var unpooled = []string{"--warm", "0"}

// sessionDir returns the directory of the session's container (named
// after the same key), making sure the container runs.
func (p *proc) sessionDir() string {
	p.t.Helper()
	key := strings.TrimPrefix(p.container(), p.prefix+"-")
	dirs, _ := filepath.Glob(filepath.Join(p.cache, "instances", "*", "sessions", key))
	if len(dirs) != 1 {
		p.t.Fatalf("the directory of the session's container: %v", dirs)
	}
	return dirs[0]
}

// sessionDirs lists the session directories under a cache directory.
func sessionDirs(t *testing.T, cache string) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(cache, "instances", "*", "sessions", "*"))
	return dirs
}

// processAlive reports whether pid runs (it is neither gone nor a zombie).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	end := bytes.LastIndexByte(b, ')')
	return end < 0 || end+2 >= len(b) || b[end+2] != 'Z'
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

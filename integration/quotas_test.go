package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/audit"
)

// TestQuotaWorkspacesPerPrincipal: with --quota-workspaces 1 and two
// tokens, a principal holding a workspace (a 2025 session, or a
// 2026-07-28 handle) is refused another, a new session with 429 and
// workspace_open with a tool error, each naming the quota, its flag and
// limit; the other principal, and what the refused one holds, are
// untouched; ending the workspace gives the share back. Every refusal is
// counted (reason "quota") and audited.
func TestQuotaWorkspacesPerPrincipal(t *testing.T) {
	other := "integration-token-other-0123456789"
	dir := t.TempDir()
	tokenFile, auditPath := filepath.Join(dir, "tokens"), filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile, "--quota-workspaces", "1",
		"--audit-log", auditPath, "--metrics-addr", "127.0.0.1:0", "--warm", "0"}})
	metricsURL := p.waitLog(5*time.Second, "serving metrics", nil)["url"].(string)
	asA, asB := map[string]string{"Authorization": "Bearer " + testToken}, map[string]string{"Authorization": "Bearer " + other}

	// A holds a 2025 session with a container.
	p.connect(asA)
	if res := p.run("echo", "a's first"); res.Stdout != "a's first\n" {
		t.Fatalf("a's session: %+v", res)
	}
	container := p.container()
	status, body := post(t, p.url, asA, initializeBody)
	if status != http.StatusTooManyRequests {
		t.Fatalf("a's second session: %d %q, want 429", status, body)
	}
	for _, want := range []string{"workspaces quota", "--quota-workspaces", "limit of 1", "hold 1", "workspace_close"} {
		if !strings.Contains(body, want) {
			t.Errorf("a's 429 %q lacks %q", body, want)
		}
	}
	modernA := modernClient(t, p.url, testToken)
	if text, isError := callTool(t, modernA, "workspace_open", nil); !isError || !strings.Contains(text, "--quota-workspaces") || !strings.Contains(text, "limit of 1") {
		t.Errorf("a's workspace_open past its quota: %q (error %v)", text, isError)
	}
	if res := p.run("echo", "a's still served"); res.Stdout != "a's still served\n" || !containerExists(t, container) {
		t.Errorf("a's session after its refusals: %+v", res)
	}

	// B is not touched by A's quota, and its handle counts against its own.
	modernB := modernClient(t, p.url, other)
	text, isError := callTool(t, modernB, "workspace_open", nil)
	if isError {
		t.Fatalf("b's workspace_open while a is at its quota: %s", text)
	}
	handle := text[strings.LastIndex(text, " ")+1:]
	if text, isError := callTool(t, modernB, "podman_shell", map[string]any{"command": []string{"echo", "b's"}, "workspace": handle}); isError || !strings.Contains(text, "b's") {
		t.Fatalf("b's call through its handle: %s", text)
	}
	if status, _ := post(t, p.url, asB, initializeBody); status != http.StatusTooManyRequests {
		t.Errorf("b's session while its handle is open: %d, want 429", status)
	}

	// Ending a workspace frees its share.
	endSessionAs(t, p, asA)
	waitUntil(t, 20*time.Second, "a's container to go with its session", func() bool { return !containerExists(t, container) })
	if text, isError := callTool(t, modernA, "workspace_open", nil); isError {
		t.Errorf("a's workspace_open after its session ended: %s", text)
	}
	if text, isError := callTool(t, modernB, "workspace_close", map[string]any{"workspace": handle}); isError {
		t.Fatalf("b's workspace_close: %s", text)
	}
	if status, body := post(t, p.url, asB, initializeBody); status != http.StatusOK {
		t.Errorf("b's session after closing its handle: %d %q", status, body)
	}

	if got := sampleValue(scrapeMetrics(t, metricsURL), "wink_refusals_total", map[string]string{"reason": "quota"}); got != 3 {
		t.Errorf("wink_refusals_total{reason=quota} = %v, want 3", got)
	}
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not one valid record a line: %v: %q", err, sc.Text())
		}
		if r.Event == audit.EventRefused && r.Reason == "quota:workspaces" {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d quota refusals audited, want 3:\n%s", refused, raw)
	}
}

// TestQuotaMemoryPerPrincipal: with --quota-memory at one container's
// --memory, a principal's second container is not made (its call says
// why, naming the quota, flag and limit) while its first runs on and the
// other principal's are made; once the first container goes with its
// session, the second is made on the next call.
func TestQuotaMemoryPerPrincipal(t *testing.T) {
	other := "integration-token-other-0123456789"
	dir := t.TempDir()
	tokenFile, auditPath := filepath.Join(dir, "tokens"), filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile, "--memory", "256m", "--quota-memory", "256m",
		"--audit-log", auditPath, "--warm", "0"}})
	asA, asB := map[string]string{"Authorization": "Bearer " + testToken}, map[string]string{"Authorization": "Bearer " + other}
	p.connect(asA)
	first := p.container()

	second := &proc{t: t, transport: "http", url: p.url, logs: p.logs}
	second.connect(asA)
	res := second.call("podman_shell", map[string]any{"command": []string{"echo", "second"}})
	if text := textOf(res); !res.IsError || !strings.Contains(text, "memory quota") || !strings.Contains(text, "--quota-memory") || !strings.Contains(text, "limit of 256 MiB") {
		t.Fatalf("a's second container: %q (error %v), want the memory quota refusal", text, res.IsError)
	}
	b := &proc{t: t, transport: "http", url: p.url, logs: p.logs}
	b.connect(asB)
	if out := b.run("echo", "b's"); out.Stdout != "b's\n" {
		t.Errorf("b's container while a is at its quota: %+v", out)
	}
	if out := p.run("echo", "a's first"); out.Stdout != "a's first\n" {
		t.Errorf("a's first container after the refusal: %+v", out)
	}

	endSessionAs(t, p, asA)
	waitUntil(t, 20*time.Second, "a's first container to go with its session", func() bool { return !containerExists(t, first) })
	if out := second.run("echo", "second"); out.Stdout != "second\n" {
		t.Errorf("a's second container once the first went: %+v", out)
	}
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"reason":"quota:memory"`)) {
		t.Errorf("no memory quota refusal audited:\n%s", raw)
	}
}

// TestQuotaEgressPerPrincipal: with --quota-egress-bytes, once one
// principal's sessions together carried the quota through their real
// egress proxies, a new connection of any of its sessions is refused
// (403 naming the quota and flag), while the other principal's go on.
func TestQuotaEgressPerPrincipal(t *testing.T) {
	other := "integration-token-other-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := httpServerOnLoopback(t, strings.Repeat("x", 4096))
	p := launch(t, startOptions{transport: "http", image: pythonImage, args: []string{"--auth-token-file", tokenFile, "--warm", "0",
		"--egress", "localhost:" + port, "--quota-egress-bytes", "2k"}})
	asA, asB := map[string]string{"Authorization": "Bearer " + testToken}, map[string]string{"Authorization": "Bearer " + other}
	request := "GET http://localhost:" + port + "/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
	p.connect(asA)
	if out := rawProxy(t, p, request); !strings.Contains(out, "xxxx") {
		t.Fatalf("a's first request, under its quota: %q", out)
	}
	second := &proc{t: t, transport: "http", url: p.url, logs: p.logs}
	second.connect(asA)
	if out := rawProxy(t, second, request); !strings.Contains(out, "403") || !strings.Contains(out, "--quota-egress-bytes") {
		t.Errorf("a's other session past a's egress quota: %q", out)
	}
	b := &proc{t: t, transport: "http", url: p.url, logs: p.logs}
	b.connect(asB)
	if out := rawProxy(t, b, request); !strings.Contains(out, "xxxx") {
		t.Errorf("b's request while a is past its quota: %q", out)
	}
}

// endSessionAs ends p's streamable HTTP session with a DELETE that carries
// headers (the client's own DELETE carries no bearer token).
func endSessionAs(t *testing.T, p *proc, headers map[string]string) {
	t.Helper()
	h := map[string]string{"Mcp-Session-Id": p.client.GetSessionId()}
	for k, v := range headers {
		h[k] = v
	}
	resp := rawRequest(t, http.MethodDelete, p.url, h, "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE of the session: %s", resp.Status)
	}
	p.endSession()
}

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/audit"
	"github.com/wink-mcp/wink-mcp/engine/enginetest"
	"github.com/wink-mcp/wink-mcp/metrics"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// switchableWriter keeps what is written, or fails while broken.
type switchableWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	broken bool
}

func (w *switchableWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		return 0, errors.New("no space left on device")
	}
	return w.buf.Write(p)
}

func (w *switchableWriter) records(t *testing.T) []audit.Record {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []audit.Record
	sc := bufio.NewScanner(bytes.NewReader(w.buf.Bytes()))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not a record: %v: %q", err, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func (w *switchableWriter) setBroken(b bool) {
	w.mu.Lock()
	w.broken = b
	w.mu.Unlock()
}

// TestAuditRecordsCallsByOutcome makes a call with bad arguments (a tool
// error), one to an unknown tool (a protocol error), and one while the
// audit log cannot be written (refused, and nothing runs), then reads the
// records.
func TestAuditRecordsCallsByOutcome(t *testing.T) {
	w := &switchableWriter{}
	cfg := workspace.DefaultConfig()
	cfg.CacheDir = t.TempDir()
	cfg.Image = "localhost/test-image:1"
	cfg.Engine = enginetest.Unreachable{URI: "unix://" + t.TempDir() + "/no-podman.sock"}
	cfg.AgentBinary = enginetest.NeverRunAgent(t)
	s, err := New(Config{Workspace: cfg, Lazy: true, Audit: audit.New(w), Metrics: metrics.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, _ := connect(t, s)
	ctx := context.Background()
	call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = name, args
		return c.CallTool(ctx, req)
	}

	secret := "s3cret-argument\n{\"event\":\"call\"}"
	res, err := call("podman_shell", map[string]any{"argv": secret})
	if err != nil || !res.IsError {
		t.Fatalf("bad arguments: %v, %+v; want a tool error", err, res)
	}
	if _, err := call("no_such_tool", map[string]any{"x": 1}); err == nil {
		t.Fatal("an unknown tool: want a protocol error")
	}
	w.setBroken(true)
	if _, err := call("podman_shell", map[string]any{"argv": []string{"true"}}); err != nil {
		t.Fatal(err) // this call's own record fails: the log is broken from now
	}
	res, err = call("podman_shell", map[string]any{"argv": []string{"true"}})
	if err != nil || !res.IsError || !strings.Contains(firstText(res), "audit log") {
		t.Fatalf("a call while the audit log is broken: %v, %+v; want it refused", err, res)
	}
	w.setBroken(false)
	res, err = call("podman_shell", map[string]any{"argv": []string{"true"}})
	if err != nil || !res.IsError || !strings.Contains(firstText(res), "audit log") {
		t.Fatalf("the first call after the log is mended is refused (its record lifts the refusal): %v, %+v", err, res)
	}
	res, err = call("podman_shell", map[string]any{})
	if err != nil || strings.Contains(firstText(res), "audit log") {
		t.Fatalf("the next call runs again: %v, %+v", err, res)
	}

	recs := w.records(t)
	var calls []audit.Record
	for _, r := range recs {
		if r.Event == audit.EventCall {
			calls = append(calls, r)
		}
	}
	want := []struct {
		tool    string
		outcome audit.Outcome
	}{{"podman_shell", audit.ToolError}, {"no_such_tool", audit.ProtocolError}, {"podman_shell", audit.Refused}, {"podman_shell", audit.ToolError}}
	if len(calls) != len(want) {
		t.Fatalf("%d call records, want %d: %+v", len(calls), len(want), calls)
	}
	for i, wr := range want {
		if calls[i].Tool != wr.tool || calls[i].Outcome != wr.outcome || len(calls[i].ArgsSHA256) != 64 {
			t.Errorf("record %d = %+v, want %s %s with a digest", i, calls[i], wr.tool, wr.outcome)
		}
	}
	raw, _ := json.Marshal(map[string]any{"argv": secret})
	if size, sha := audit.Digest(raw); calls[0].ArgsBytes != size || calls[0].ArgsSHA256 != sha {
		t.Errorf("digest %d %s, want %d %s", calls[0].ArgsBytes, calls[0].ArgsSHA256, size, sha)
	}
	if bytes.Contains(w.buf.Bytes(), []byte("s3cret")) {
		t.Error("the audit log holds an argument's content")
	}
	if recs[0].Event != audit.EventSessionOpen || recs[0].Session == "" {
		t.Errorf("first record %+v, want the session's opening", recs[0])
	}
}

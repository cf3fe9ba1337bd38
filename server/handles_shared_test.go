package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/enginetest"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// replicaOn starts an HTTP server with the two test tokens on cacheDir,
// which several share as replicas share a cluster (or as a server shares
// it with the one it replaced), with an engine that is never reached.
func replicaOn(t *testing.T, cacheDir string) (*Server, string) {
	t.Helper()
	cfg := workspace.DefaultConfig()
	cfg.CacheDir = cacheDir
	cfg.Image = "localhost/test-image:1"
	cfg.Engine = enginetest.Unreachable{URI: "unix://" + t.TempDir() + "/no-podman.sock"}
	cfg.AgentBinary = enginetest.NeverRunAgent(t)
	s, err := New(Config{Workspace: cfg, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.cfg.HTTP = DefaultHTTPConfig()
	s.cfg.HTTP.AuthTokens = []string{goodToken, otherToken}
	return s, serveHTTP(t, s, TransportHTTP)
}

func toolCall(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + modernMeta + `}}`
}

// callOn calls tool under handle (with its Mcp-Param-Workspace header, as
// a 2026-07-28 client sends it) on base with token's bearer; the body.
func callOn(t *testing.T, base, token, tool, handle string) string {
	t.Helper()
	body := toolCall(tool, `{"path":"a.txt","workspace":"`+handle+`"}`)
	req, _ := http.NewRequest(http.MethodPost, base+streamablePath, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool,
		"Mcp-Param-Workspace": handle} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return string(out)
}

// TestKeptHandleRecordIsServedElsewhere: a handle on a kept workspace is
// recorded by digest beside it; another server on the same store adopts
// it for its principal once the first has let the workspace go, refuses
// another principal exactly as it refuses a handle never issued, and
// while the first still serves it, says so to its principal only; a close
// on one server ends the handle on the other.
func TestKeptHandleRecordIsServedElsewhere(t *testing.T) {
	cache := t.TempDir()
	a, baseA := replicaOn(t, cache)
	_, baseB := replicaOn(t, cache)
	_, _, body := post(t, baseA, goodToken, "", toolCall("workspace_open", `{"name":"proj"}`))
	if !strings.Contains(body, handlePrefix) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("workspace_open: %s", body)
	}
	handle := handlePrefix + strings.SplitN(strings.SplitN(body, handlePrefix, 2)[1], `"`, 2)[0]
	files, _ := filepath.Glob(filepath.Join(keep.Root(cache, "proj"), keep.HandlesDir, "*.json"))
	if len(files) != 1 || filepath.Base(files[0]) != engine.HandleDigest(handle)+".json" {
		t.Fatalf("records %v; want one named by the handle's digest", files)
	}
	if data, _ := os.ReadFile(files[0]); strings.Contains(string(data), strings.TrimPrefix(handle, handlePrefix)) {
		t.Fatalf("the record holds the handle: %s", data)
	}
	read := func(base, token, h string) string { return callOn(t, base, token, "read_file", h) }
	unknown := read(baseB, goodToken, handlePrefix+"never-issued")
	if !strings.Contains(unknown, "unknown workspace handle") {
		t.Fatalf("a handle never issued: %s", unknown)
	}
	for _, base := range []string{baseA, baseB} {
		if got := read(base, otherToken, handle); got != unknown {
			t.Errorf("another principal's use of the handle got\n%s\nnot what a handle never issued gets:\n%s", got, unknown)
		}
	}
	if got := read(baseB, goodToken, handle); !strings.Contains(got, "being served by another wink-mcp server") {
		t.Errorf("the handle on B while A serves it: %s", got)
	}
	a.Close() // A goes (its workspace is let go): B serves the handle
	got := read(baseB, goodToken, handle)
	if strings.Contains(got, "unknown workspace handle") || strings.Contains(got, "another wink-mcp server") {
		t.Fatalf("the handle on B after A ended: %s", got)
	}
	closed := callOn(t, baseB, goodToken, "workspace_close", handle)
	if strings.Contains(closed, `"isError":true`) {
		t.Fatalf("closing on B: %s", closed)
	}
	if files, _ := filepath.Glob(filepath.Join(keep.Root(cache, "proj"), keep.HandlesDir, "*.json")); len(files) != 0 {
		t.Errorf("records %v after the close", files)
	}
	if got := read(baseB, goodToken, handle); got != unknown {
		t.Errorf("a closed handle got\n%s\nnot\n%s", got, unknown)
	}
}

// TestAHandleClosedElsewhereEndsHere: a server holding a handle whose
// record was removed (closed on another server) refuses its next call as
// unknown and ends the workspace.
func TestAHandleClosedElsewhereEndsHere(t *testing.T) {
	cache := t.TempDir()
	a, baseA := replicaOn(t, cache)
	_, _, body := post(t, baseA, goodToken, "", toolCall("workspace_open", `{"name":"proj"}`))
	handle := handlePrefix + strings.SplitN(strings.SplitN(body, handlePrefix, 2)[1], `"`, 2)[0]
	if a.handles.count() != 1 {
		t.Fatalf("%d handles held", a.handles.count())
	}
	store := &keep.HandleFiles{CacheDir: cache}
	if err := store.DeleteHandle(t.Context(), "proj", engine.HandleDigest(handle)); err != nil {
		t.Fatal(err)
	}
	a.handles.now = func() time.Time { return time.Now().Add(recordCheckEvery) } // as if recordCheckEvery had passed
	got := callOn(t, baseA, goodToken, "read_file", handle)
	if !strings.Contains(got, "unknown workspace handle") {
		t.Errorf("a handle closed elsewhere: %s", got)
	}
	if a.handles.count() != 0 {
		t.Errorf("%d handles still held", a.handles.count())
	}
}

// TestAnExpiredRecordIsRemovedNotServed: a record unused for the idle
// timeout (its server gone before it could end it) is refused as unknown,
// and removed, by the server that finds it.
func TestAnExpiredRecordIsRemovedNotServed(t *testing.T) {
	cache := t.TempDir()
	s, base := replicaOn(t, cache)
	handle := handlePrefix + "from-a-server-long-gone"
	store := &keep.HandleFiles{CacheDir: cache}
	rec := engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: principalOf(goodToken), Workspace: "proj",
		Used: time.Now().Add(-s.cfg.Workspace.IdleTimeout - time.Second)}
	if err := store.PutHandle(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if got := callOn(t, base, goodToken, "read_file", handle); !strings.Contains(got, "unknown workspace handle") {
		t.Errorf("an expired record's handle: %s", got)
	}
	if _, err := store.FindHandle(t.Context(), rec.Digest); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("the expired record is still there: %v", err)
	}
	rec.Used = time.Now()
	if err := store.PutHandle(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if got := callOn(t, base, goodToken, "read_file", handle); strings.Contains(got, "unknown workspace handle") {
		t.Errorf("the same record, fresh, was refused: %s", got)
	}
}

// TestACrowdAdoptsAHandleOnce: many calls at once on a handle this server
// does not hold (a restart, or a call of a handle opened elsewhere) adopt
// it once: none is refused, as a second adoption would be by the first's
// hold on the kept workspace, and one handle is held.
func TestACrowdAdoptsAHandleOnce(t *testing.T) {
	cache := t.TempDir()
	s, base := replicaOn(t, cache)
	handle := handlePrefix + "opened-before-a-restart"
	rec := engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: principalOf(goodToken), Workspace: "proj", Used: time.Now()}
	if err := (&keep.HandleFiles{CacheDir: cache}).PutHandle(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	s.shared.store = slowFind{s.shared.store} // every call of the crowd finds the record before any has adopted it
	const crowd = 16
	got := make(chan string, crowd)
	var wg sync.WaitGroup
	for range crowd {
		wg.Go(func() { got <- callOn(t, base, goodToken, "read_file", handle) })
	}
	wg.Wait()
	close(got)
	for body := range got {
		if strings.Contains(body, "unknown workspace handle") || strings.Contains(body, "another wink-mcp server") {
			t.Errorf("a call of the crowd: %s", body)
		}
	}
	if n := s.handles.count(); n != 1 {
		t.Errorf("%d handles held after the crowd, want 1", n)
	}
}

// slowFind is a handle store whose lookups take 100 ms.
type slowFind struct{ engine.HandleStore }

func (s slowFind) FindHandle(ctx context.Context, digest string) (engine.HandleRecord, error) {
	time.Sleep(100 * time.Millisecond)
	return s.HandleStore.FindHandle(ctx, digest)
}

// TestAdoptionsCountAgainstMaxSessions: a server at its --max-sessions
// refuses to adopt a recorded handle, naming the flag.
func TestAdoptionsCountAgainstMaxSessions(t *testing.T) {
	cache := t.TempDir()
	s, base := replicaOn(t, cache)
	s.shared.maxHandles = 1
	_, _, body := post(t, base, goodToken, "", toolCall("workspace_open", `{}`))
	if !strings.Contains(body, handlePrefix) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("workspace_open: %s", body)
	}
	handle := handlePrefix + "recorded-elsewhere"
	rec := engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: principalOf(goodToken), Workspace: "proj", Used: time.Now()}
	if err := (&keep.HandleFiles{CacheDir: cache}).PutHandle(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if got := callOn(t, base, goodToken, "read_file", handle); !strings.Contains(got, "at most 1 workspace handles open at once (--max-sessions)") {
		t.Errorf("an adoption past --max-sessions: %s", got)
	}
}

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// resourcesRun is what tsclient/resources.mjs prints.
type resourcesRun struct {
	Protocol, Resources              string
	Listed, ListedWithoutHandle      []string
	Templates, Snapshot, Complete    []string
	Read, Read2, Traversal           string
	Honored                          []string
	UpdatedByShell, UpdatedByTool    bool
	SnapshotUpdated                  bool
	Mixed, LegacyURI                 string
	ListedUnknown, ReadUnknown       string
	ClosedBy, ReadAfterClose, Listen string
	CompleteError, SnapshotError     string
}

// runResourcesClient runs tsclient/resources.mjs with args.
func runResourcesClient(t *testing.T, args ...string) resourcesRun {
	t.Helper()
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK v2 client is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK v2 client is not installed; run make setup")
	}
	cmd := exec.Command("node", append([]string{filepath.Join("tsclient", "resources.mjs")}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("resources.mjs %v: %v\n%s", args, err, out)
	}
	var run resourcesRun
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("resources.mjs printed %q: %v", out, err)
	}
	return run
}

// checkResourcesRun checks what a 2026-07-28 client did with its handle's
// resources: listed, read, completed and followed them, heard of a change
// made by a shell command and one made by a tool, and had its stream end
// with the handle (closedBy: how, "" when the handle was kept).
func checkResourcesRun(t *testing.T, run resourcesRun, closedBy string) {
	t.Helper()
	if run.Protocol != "2026-07-28" || !strings.HasPrefix(run.Resources, "wink://workspace/wsr_") {
		t.Fatalf("protocol %q, resources %q", run.Protocol, run.Resources)
	}
	file, snapshot := run.Resources+"files/dir/a.txt", run.Resources+"snapshot"
	if !slices.Contains(run.Listed, file) || !slices.Contains(run.Listed, snapshot) || !slices.Contains(run.Listed, run.Resources+"digest") || len(run.ListedWithoutHandle) != 0 {
		t.Errorf("resources/list with the handle: %q, without: %q", run.Listed, run.ListedWithoutHandle)
	}
	if !strings.Contains(run.ListedUnknown, "_meta.wink-mcp/workspace: unknown workspace handle") || !strings.Contains(run.ReadUnknown, "resource not found: file:///etc/passwd") {
		t.Errorf("resources/list of a made-up handle: %q; a read of a URI no workspace has: %q", run.ListedUnknown, run.ReadUnknown)
	}
	slices.Sort(run.Templates)
	if want := []string{"wink://workspace/{workspace}/digest", "wink://workspace/{workspace}/files/{+path}", "wink://workspace/{workspace}/snapshot"}; !slices.Equal(run.Templates, want) {
		t.Errorf("templates %q, want %q", run.Templates, want)
	}
	if run.Read != "one\n" || !slices.Contains(run.Snapshot, file) {
		t.Errorf("read %q, snapshot %q", run.Read, run.Snapshot)
	}
	if !strings.Contains(run.Traversal, "uri: the path") {
		t.Errorf("a traversal: %q", run.Traversal)
	}
	if !slices.Equal(run.Complete, []string{"dir/a.txt"}) {
		t.Errorf("completing dir/: %q", run.Complete)
	}
	if !slices.Equal(run.Honored, []string{file, snapshot}) {
		t.Errorf("the stream follows %q", run.Honored)
	}
	if !run.UpdatedByShell || run.Read2 != "from-shell\n" || !run.UpdatedByTool || !run.SnapshotUpdated {
		t.Errorf("updates: by shell %v (then read %q), by tool %v, snapshot %v", run.UpdatedByShell, run.Read2, run.UpdatedByTool, run.SnapshotUpdated)
	}
	if !strings.Contains(run.Mixed, "another workspace") || !strings.Contains(run.LegacyURI, "not a resource of a workspace handle") {
		t.Errorf("a stream of two workspaces: %q; of a 2025 URI: %q", run.Mixed, run.LegacyURI)
	}
	if closedBy != "" && (run.ClosedBy != closedBy || !strings.Contains(run.ReadAfterClose, "unknown workspace handle")) {
		t.Errorf("after workspace_close the stream ended %q (want %q), a read: %q", run.ClosedBy, closedBy, run.ReadAfterClose)
	}
}

// TestHandleResourcesOnStdio: a 2026-07-28 client of the TypeScript SDK
// v2 over stdio lists, reads, completes and follows its handle's
// resources; workspace_close ends the stream with its result.
func TestHandleResourcesOnStdio(t *testing.T) {
	prefix := "wr" + randomHex(4)
	run := runResourcesClient(t, "own", "stdio", winkBin, "--transport", "stdio", "--image", testImage, "--cache-dir", t.TempDir(),
		"--name-prefix", prefix, "--podman-url", "unix://"+podmanSocket)
	checkResourcesRun(t, run, "graceful")
}

// TestHandleResourcesOnStreamableHTTP does the same over streamable HTTP
// (the stream ends with its connection: mcp-go writes no result on a
// request whose context ended), and a second principal can neither read,
// complete nor follow the first one's workspace.
func TestHandleResourcesOnStreamableHTTP(t *testing.T) {
	other := "integration-token-other-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile}})
	checkResourcesRun(t, runResourcesClient(t, "own", "http", p.url, testToken), "remote")

	kept := runResourcesClient(t, "keep", "http", p.url, testToken)
	checkResourcesRun(t, kept, "")
	probe := runResourcesClient(t, "probe", "http", p.url, other, kept.Resources)
	for what, got := range map[string]string{"read": probe.Read, "snapshot": probe.SnapshotError, "complete": probe.CompleteError, "listen": probe.Listen} {
		if !strings.Contains(got, "unknown workspace handle") {
			t.Errorf("another principal's %s of the workspace: %q", what, got)
		}
	}
	// The owner still reads it.
	again := runResourcesClient(t, "probe", "http", p.url, testToken, kept.Resources)
	if again.Read != "ok" || again.Listen != "ok" {
		t.Errorf("the owner after the other's attempts: read %q, listen %q", again.Read, again.Listen)
	}
}

// TestHandleStreamEndsWhenTheHandleExpires: a stream does not keep its
// handle alive; when the handle expires (--idle-timeout) its stream ends
// with its result, and the reference is unknown.
func TestHandleStreamEndsWhenTheHandleExpires(t *testing.T) {
	prefix := "wr" + randomHex(4)
	run := runResourcesClient(t, "expire", "stdio", winkBin, "--transport", "stdio", "--image", testImage, "--cache-dir", t.TempDir(),
		"--name-prefix", prefix, "--podman-url", "unix://"+podmanSocket, "--idle-timeout", "2s")
	if run.ClosedBy != "graceful" || !strings.Contains(run.ReadAfterClose, "unknown workspace handle") {
		t.Errorf("the stream of an idle handle ended %q; a read then: %q", run.ClosedBy, run.ReadAfterClose)
	}
}

// TestModernCancelsStayWithTheirPrincipal: over streamable HTTP, where a
// 2026-07-28 request has no session, another principal's
// notifications/cancelled for the ids every client uses neither cancels a
// call nor ends a subscriptions/listen stream.
func TestModernCancelsStayWithTheirPrincipal(t *testing.T) {
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK v2 client is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK v2 client is not installed; run make setup")
	}
	other := "integration-token-other-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token-file", tokenFile}})
	cmd := exec.Command("node", filepath.Join("tsclient", "cancel.mjs"), p.url, testToken, other)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cancel.mjs: %v\n%s", err, out)
	}
	var run struct {
		Long, StreamAfterOthersCancels, OwnCancel, AfterOwnCancel string
		Updates                                                   []string
	}
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("cancel.mjs printed %q: %v", out, err)
	}
	if run.Long != "done\n" || run.StreamAfterOthersCancels != "open" || len(run.Updates) == 0 {
		t.Errorf("after the other principal's cancels: the call gave %q, the stream is %q, updates %q", run.Long, run.StreamAfterOthersCancels, run.Updates)
	}
	if run.OwnCancel == "answered" || run.AfterOwnCancel != "absent\n" {
		t.Errorf("the client's own cancel: %q; the command then: %q", run.OwnCancel, run.AfterOwnCancel)
	}
}

package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQuotaCheckpointBytesPerPrincipal: with --quota-checkpoint-bytes 1m
// and two tokens on real Podman, A's kept workspace holds a checkpoint of
// 400 KiB; A's next, of 700 KiB more, is refused naming the quota, its
// flag, limit, use and remedy, and leaves no checkpoint, while B
// checkpoints 900 KiB in all under its own quota. Deleting A's checkpoint
// (and the file it held) frees the room: A's checkpoint is taken. The
// refusal is counted and audited. After a restart the server finds A's
// kept workspace's checkpoints on disk and counts them: A's new workspace
// cannot checkpoint 400 KiB more; B still can.
func TestQuotaCheckpointBytesPerPrincipal(t *testing.T) {
	other := "integration-token-other-0123456789"
	dir, cache := t.TempDir(), t.TempDir()
	tokenFile, auditPath := filepath.Join(dir, "tokens"), filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--auth-token-file", tokenFile, "--quota-checkpoint-bytes", "1m", "--warm", "0"}
	p := launch(t, startOptions{transport: "http", cache: cache, args: append(args, "--audit-log", auditPath, "--metrics-addr", "127.0.0.1:0")})
	metricsURL := p.waitLog(5*time.Second, "serving metrics", nil)["url"].(string)
	asA, asB := map[string]string{"Authorization": "Bearer " + testToken}, map[string]string{"Authorization": "Bearer " + other}
	write := func(s *proc, name string, kib int) {
		t.Helper()
		if r := s.run("sh", "-c", "head -c "+strconv.Itoa(kib*1024)+" /dev/urandom > /workspace/"+name); r.ExitCode != 0 {
			t.Fatalf("writing %s: %+v", name, r)
		}
	}
	checkpoint := func(s *proc) (string, bool) {
		t.Helper()
		res := s.call("workspace_checkpoint", map[string]any{"message": "quota test"})
		return textOf(res), res.IsError
	}

	a := p.sibling(asA, "?workspace=a-kept")
	write(a, "one", 400)
	if text, isError := checkpoint(a); isError {
		t.Fatalf("a's first checkpoint, under the quota: %s", text)
	}
	write(a, "two", 700)
	text, isError := checkpoint(a)
	if !isError {
		t.Fatalf("a's checkpoint past its quota was taken: %s", text)
	}
	t.Logf("a's refusal: %s", text)
	for _, want := range []string{"checkpoints quota", "--quota-checkpoint-bytes", "limit of 1048576 bytes", "you hold", "workspace_checkpoint_delete"} {
		if !strings.Contains(text, want) {
			t.Errorf("a's refusal %q lacks %q", text, want)
		}
	}
	if list := textOf(a.call("workspace_checkpoints", nil)); !strings.HasPrefix(list, "1 checkpoints") {
		t.Errorf("after the refusal a's workspace lists: %s", list)
	}

	b := p.sibling(asB, "")
	write(b, "one", 600)
	if text, isError := checkpoint(b); isError {
		t.Errorf("b's checkpoint while a is at its quota: %s", text)
	}
	write(b, "two", 300)
	if text, isError := checkpoint(b); isError {
		t.Errorf("b's second checkpoint, 900 KiB in all: %s", text)
	}

	// Deleting a checkpoint gives its bytes back.
	if res := a.call("workspace_checkpoint_delete", map[string]any{"checkpoints": []string{"c1"}}); res.IsError {
		t.Fatalf("a's delete: %s", textOf(res))
	}
	a.run("rm", "/workspace/one")
	if text, isError := checkpoint(a); isError {
		t.Fatalf("a's checkpoint after its delete: %s", text)
	}

	if got := sampleValue(scrapeMetrics(t, metricsURL), "wink_refusals_total", map[string]string{"reason": "quota"}); got != 1 {
		t.Errorf("wink_refusals_total{reason=quota} = %v, want 1", got)
	}
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte(`"reason":"quota:checkpoints"`)); n != 1 {
		t.Errorf("%d checkpoint quota refusals audited, want 1:\n%s", n, raw)
	}

	// A restarted server counts the kept workspace's checkpoints from disk.
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.waitExit(30 * time.Second)
	q := launch(t, startOptions{transport: "http", cache: cache, args: args})
	a2 := q.sibling(asA, "")
	write(a2, "three", 400)
	if text, isError := checkpoint(a2); !isError || !strings.Contains(text, "--quota-checkpoint-bytes") {
		t.Errorf("a's checkpoint past the kept workspace's bytes after a restart: %q (error %v)", text, isError)
	}
	b2 := q.sibling(asB, "")
	write(b2, "three", 400)
	if text, isError := checkpoint(b2); isError {
		t.Errorf("b's checkpoint after the restart: %s", text)
	}
}

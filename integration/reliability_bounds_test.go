package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// TestReliabilityBounds tries, through the binary and Podman, the bounds a
// model could once reset by handing its workspace over, switching profile
// or restarting: containers against --max-sessions, the host disk against
// --disk-limit, egress bytes against --egress-max-bytes, and the task
// results the server keeps, and the session cap against a crowd.
func TestReliabilityBounds(t *testing.T) {
	t.Run("handed-over containers count against --max-sessions", parkedCountAsSessions)
	t.Run("handed-over workspaces share the session's --disk-limit", handedOverShareTheDisk)
	t.Run("a handed-over workspace kept for its export still shares --disk-limit", keptForExportShareTheDisk)
	t.Run("the egress count survives every transition", egressSurvivesTransitions)
	t.Run("the egress count survives a kill -9", egressSurvivesAKill)
	t.Run("task results are bounded and go with their session", taskResultsAreBounded)
	t.Run("a crowd of new sessions never passes --max-sessions (HTTP)", crowdStaysUnderTheCap("http"))
	t.Run("a crowd of new sessions never passes --max-sessions (SSE)", crowdStaysUnderTheCap("sse"))
	t.Run("a handoff racing new sessions for the last slot", handoffRacesTheCrowd)
}

// parkedCountAsSessions: with --max-sessions 2, a session that starts a
// long job and hands its workspace over, again and again, never makes the
// server hold more than two containers, and a new session is refused
// while a handed-over workspace holds the second slot.
func parkedCountAsSessions(t *testing.T) {
	const limit, rounds = 2, 5
	p := start(t, startOptions{transport: "http", args: []string{"--max-sessions", fmt.Sprint(limit), "--warm", "0"}})
	most, refused, broken := 0, 0, 0
	for round := range rounds {
		p.shell(map[string]any{"command": []string{"sleep", "600"}, "background": true})
		res := p.call("workspace_handoff", map[string]any{"expires_in_seconds": 600})
		if res.IsError {
			refused++
			if msg := textOf(res); !strings.Contains(msg, "--max-sessions 2") || !strings.Contains(msg, "workspace_attach") {
				t.Errorf("round %d: the refusal does not name the limit and what to do: %s", round, msg)
				broken++
			}
		}
		n := len(containersNamed(t, p.prefix))
		most = max(most, n)
		if n > limit {
			t.Errorf("round %d: %d containers run, past --max-sessions %d", round, n, limit)
			broken++
		}
	}
	if refused != rounds-1 {
		t.Errorf("%d of %d handoffs were refused; want all but the first", refused, rounds)
	}
	status, body := initializeRaw(t, p.url)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "handed-over") {
		t.Errorf("a new session while the handed-over workspace holds the last slot: %d %s", status, body)
		broken++
	}
	recordBound(t, promiseFigure{Class: "containers: a session starts a long job and hands its workspace over, 5 times, under --max-sessions 2 (HTTP)",
		Tried: rounds + 1, Broken: broken,
		Measured: fmt.Sprintf("at most %d containers ran (the cap is %d); %d of %d handoffs refused naming --max-sessions and workspace_attach; a new session got %d naming the handed-over workspace",
			most, limit, refused, rounds, status)})
}

// initializeRaw posts an initialize to a streamable HTTP server and
// returns the answer's status and body.
func initializeRaw(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode, b.String()
}

// handedOverShareTheDisk: with --disk-limit 64m, a stdio session that
// writes 50 MB and hands its workspace over, four times, never holds more
// than the limit on the host; past it, the call says why and what to do;
// the handed-over workspaces go when their handles expire, and the
// session has its whole disk again.
func handedOverShareTheDisk(t *testing.T) {
	const limit, rounds = 64 << 20, 4
	cache := t.TempDir()
	p := start(t, startOptions{cache: cache, args: []string{"--disk-limit", "64m", "--warm", "0"}})
	most, refused, broken := int64(0), 0, 0
	for round := range rounds {
		write := p.call("podman_shell", map[string]any{"command": []string{"sh", "-c", "head -c 50000000 /dev/zero > big"}})
		handoff := p.call("workspace_handoff", map[string]any{"expires_in_seconds": 10})
		for _, res := range []string{textOf(write), textOf(handoff)} {
			if strings.Contains(res, "its disk limit") && !(strings.Contains(res, "--disk-limit") && strings.Contains(res, "workspace_attach")) {
				t.Errorf("round %d: the refusal does not name the limit and what to do: %s", round, res)
				broken++
			}
		}
		if handoff.IsError {
			refused++
		}
		held := diskImagesBytes(t, cache)
		most = max(most, held)
		if held > limit {
			t.Errorf("round %d: the session's disk images take %d bytes of the host's disk, past --disk-limit %d", round, held, limit)
			broken++
		}
	}
	if refused == 0 {
		t.Errorf("no handoff was refused: each took 50 MB of a 64 MiB limit")
	}
	waitUntil(t, 60*time.Second, "the unattached handed-over workspaces to be deleted at their expiry", func() bool {
		entries, _ := os.ReadDir(filepath.Join(cache, "workspaces"))
		return len(entries) == 0
	})
	p.call("podman_shell", map[string]any{"action": "stop"}) // its next filesystem is made with the whole limit
	if got := p.run("sh", "-c", "head -c 50000000 /dev/zero > big && echo written"); strings.TrimSpace(got.Stdout) != "written" {
		t.Errorf("after the handed-over workspaces expired, 50 MB do not fit: %q %q", got.Stdout, got.Stderr)
		broken++
	}
	recordBound(t, promiseFigure{Class: "disk: a stdio session writes 50 MB and hands its workspace over, 4 times, under --disk-limit 64m",
		Tried: rounds + 1, Broken: broken,
		Measured: fmt.Sprintf("the session's disk images took at most %.1f MiB of the host (the limit is 64 MiB); %d of %d handoffs refused naming --disk-limit; the unattached ones were deleted at their expiry and 50 MB fitted again",
			float64(most)/(1<<20), refused, rounds)})
}

// keptForExportShareTheDisk: with --disk-limit 64m and --export-on-exit
// into a folder that cannot be written, a stdio session writes 50 MB and
// a change to its mounted folder, and hands its workspace over; nobody
// attaches it, its export fails at its expiry and it is kept for it.
// While it is, the session still cannot use more than the limit; once
// another start exports it (the folder writable again) and deletes it,
// the session has its whole disk again.
func keptForExportShareTheDisk(t *testing.T) {
	const limit = 64 << 20
	root, folder := npmProject(t)
	cache, blocker := t.TempDir(), filepath.Join(t.TempDir(), "blocked")
	must(t, os.WriteFile(blocker, nil, 0o600))
	exportDir := filepath.Join(blocker, "patches")
	p := start(t, startOptions{cache: cache, args: []string{"--disk-limit", "64m", "--warm", "0", "--mount", folder, "--allowed-root", root, "--export-on-exit", exportDir}})
	p.run("sh", "-c", "head -c 50000000 /dev/zero > big && sed -i s/3000/8080/ proj/src/index.js")
	var h tools.WorkspaceHandoffResult
	decodeStructured(t, p.call("workspace_handoff", map[string]any{"expires_in_seconds": 2}), &h)
	kept := filepath.Join(cache, "workspaces", h.Workspace)
	waitUntil(t, 2*time.Minute, "the expired workspace to be kept for its export, or deleted", func() bool {
		return p.logs.find("the handed-over workspace's changes are kept for export", nil) != nil || !fileExists(kept)
	})
	tried, broken, state := 3, 0, "kept for its export"
	if !fileExists(kept) {
		state = "deleted unexported"
		t.Errorf("the handed-over workspace was deleted though its export could not be written")
		broken++
	}
	write := p.call("podman_shell", map[string]any{"command": []string{"sh", "-c", "head -c 50000000 /dev/zero > big && echo written"}})
	held := diskImagesBytes(t, cache)
	if held > limit || strings.Contains(textOf(write), "written") {
		t.Errorf("while the workspace waits for its export, the session wrote 50 MB more (%s); the disk images take %d bytes, against --disk-limit %d", textOf(write), held, limit)
		broken++
	} else if !strings.Contains(textOf(write), "--disk-limit") || !strings.Contains(textOf(write), "exported") {
		t.Errorf("the refusal does not name the limit and the export it waits for: %s", textOf(write))
		broken++
	}
	must(t, os.Remove(blocker))
	sweepWithNextServer(t, cache)
	patches, _ := filepath.Glob(filepath.Join(exportDir, "*", "proj.patch"))
	again := p.run("sh", "-c", "head -c 50000000 /dev/zero > big && echo written")
	fitted := map[bool]string{true: "fitted", false: "did not fit"}
	if len(patches) != 1 || fileExists(kept) || strings.TrimSpace(again.Stdout) != "written" {
		t.Errorf("after the next start: patches %v, workspace kept %v, 50 MB written %q %q", patches, fileExists(kept), again.Stdout, again.Stderr)
		broken++
	}
	recordBound(t, promiseFigure{Class: "disk: a stdio session writes 50 MB and a change to a mounted folder under --disk-limit 64m, hands its workspace over, and its export at expiry cannot be written",
		Tried: tried, Broken: broken,
		Measured: fmt.Sprintf("at its expiry the workspace was %s; the session's disk images then took %.1f MiB (the limit is 64 MiB) and 50 MB more %s; "+
			"the next start wrote %d patch, and 50 MB %s again", state, float64(held)/(1<<20), fitted[strings.Contains(textOf(write), "written")],
			len(patches), fitted[strings.TrimSpace(again.Stdout) == "written"])})
}

// diskImagesBytes sums what the filesystem images under a cache directory
// (sessions' and kept workspaces') take on the host's disk.
func diskImagesBytes(t *testing.T, cache string) int64 {
	t.Helper()
	var n int64
	for _, pattern := range []string{"instances/*/disks/*.img", "workspaces/*/disk.img"} {
		matches, _ := filepath.Glob(filepath.Join(cache, pattern))
		for _, m := range matches {
			var st syscall.Stat_t
			if syscall.Stat(m, &st) == nil {
				n += st.Blocks * 512
			}
		}
	}
	return n
}

// recordBound records a bound's promise row and logs what was measured.
func recordBound(t *testing.T, f promiseFigure) {
	t.Helper()
	t.Logf("%s: %d tried, %d broken: %s", f.Class, f.Tried, f.Broken, f.Measured)
	recordPromise(f)
}

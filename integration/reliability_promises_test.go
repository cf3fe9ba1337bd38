package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// promiseFigure is how one promise held when tried the way a crowd or a
// hostile model would.
type promiseFigure struct {
	Class    string `json:"class"`
	Tried    int    `json:"tried"`
	Broken   int    `json:"broken"`
	Measured string `json:"measured"`
}

func recordPromise(f promiseFigure) {
	suite.record(func(s *figures) {
		s.Promises = append(s.Promises, f)
		s.PromisesMeasured = time.Now().UTC().Format("2006-01-02")
	})
}

// TestReliabilityPromises tries, through the real binary and Podman, each
// class of promise that once broke at the edges: concurrent edits, names
// overlayfs would read as metadata, sparse files, HTTP time limits and
// stdio fairness.
func TestReliabilityPromises(t *testing.T) {
	t.Run("concurrent edits", func(t *testing.T) {
		p := start(t, startOptions{})
		const n = 40
		var lines []string
		for i := range n {
			lines = append(lines, fmt.Sprintf("marker-%d", i))
		}
		if res := p.call("write_file", map[string]any{"file_path": "shared.txt", "content": strings.Join(lines, "\n") + "\n"}); res.IsError {
			t.Fatal(textOf(res))
		}
		var wg sync.WaitGroup
		ok := make([]bool, n)
		for i := range n {
			wg.Go(func() {
				var req mcp.CallToolRequest
				req.Params.Name = "edit_file"
				req.Params.Arguments = map[string]any{"file_path": "shared.txt", "old_string": fmt.Sprintf("marker-%d\n", i), "new_string": fmt.Sprintf("edited-%d\n", i)}
				res, err := p.client.CallTool(context.Background(), req)
				ok[i] = err == nil && !res.IsError
			})
		}
		wg.Wait()
		content := p.run("cat", "shared.txt").Stdout
		succeeded, lost := 0, 0
		for i := range n {
			if ok[i] {
				succeeded++
				if !strings.Contains(content, fmt.Sprintf("edited-%d\n", i)) {
					lost++
				}
			}
		}
		if lost > 0 {
			t.Errorf("%d of %d edits that answered success are not in the file", lost, succeeded)
		}
		recordPromise(promiseFigure{Class: "concurrency: edit_file calls at once on one file, over stdio", Tried: n, Broken: lost,
			Measured: fmt.Sprintf("%d answered success, %d of those lost", succeeded, lost)})
	})

	root, folder := project(t)
	p := start(t, startOptions{args: []string{"--mount", folder, "--allowed-root", root}})

	t.Run("overlay names", func(t *testing.T) {
		names := []string{".wh.README.md", ".wh..wh..opq", "src/.wh..wh..opq", "lib/.wh.a", ".wh.", ".wh..wh..plnk", "docs/.wh.guide.txt"}
		script := "cd proj"
		for _, name := range names {
			script += " && touch " + name
		}
		p.run("sh", "-c", script)
		want := p.run("sh", "-c", "cd proj && find . ! -type d | sort").Stdout
		dst := t.TempDir()
		if out, err := exec.Command("cp", "-a", folder+"/.", dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		patch := fullDiff(t, p)
		apply := exec.Command("git", "apply", "-p2", "-") // workspace_diff's paths start with proj/
		apply.Dir, apply.Stdin = dst, strings.NewReader(patch)
		if out, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("git apply: %v\n%s\n%s", err, out, patch)
		}
		got, err := exec.Command("sh", "-c", "cd "+dst+" && find . ! -type d | sort").Output()
		if err != nil {
			t.Fatal(err)
		}
		wantList, gotList := strings.Fields(want), strings.Fields(string(got))
		broken := 0
		for _, f := range wantList {
			if !slices.Contains(gotList, f) {
				broken++
				t.Errorf("%s is in the container but not in the patched copy", f)
			}
		}
		for _, f := range gotList {
			if !slices.Contains(wantList, f) {
				broken++
				t.Errorf("%s is in the patched copy but not in the container", f)
			}
		}
		recordPromise(promiseFigure{Class: "overlay names: whiteout and opaque names the model creates in a mounted folder", Tried: len(names), Broken: broken,
			Measured: fmt.Sprintf("the patch applied to a clean copy gives the %d files the container has; %d differ", len(wantList), broken)})
	})

	t.Run("sparse files", func(t *testing.T) {
		p.run("sh", "-c", "truncate -s 200G proj/huge.img && echo new > proj/small.txt")
		begin := time.Now()
		res := p.call("workspace_changes", map[string]any{})
		changesMs := time.Since(begin).Milliseconds()
		begin = time.Now()
		diff := fullDiff(t, p)
		diffMs := time.Since(begin).Milliseconds()
		var changes tools.WorkspaceChangesResult
		decodeStructured(t, res, &changes)
		broken := 0
		listed := false
		for _, c := range changes.Changes {
			if strings.HasSuffix(c.Path, "huge.img") {
				listed = strings.Contains(c.LeftOut, "over the")
			}
		}
		if res.IsError || !listed {
			broken++
			t.Errorf("workspace_changes does not list huge.img as left out: %s", textOf(res))
		}
		if !strings.Contains(diff, "small.txt") || !strings.Contains(diff, "# not in this patch: proj/huge.img") {
			broken++
			t.Errorf("the diff lacks small.txt or the note on huge.img:\n%.2000s", diff)
		}
		recordPromise(promiseFigure{Class: "sparse files: a 200 GB sparse file in a mounted folder", Tried: 2, Broken: broken,
			Measured: fmt.Sprintf("workspace_changes %d ms, the whole workspace_diff %d ms; listed with its size, never read", changesMs, diffMs)})
	})

	t.Run("HTTP time limits", func(t *testing.T) {
		h := start(t, startOptions{transport: "http", args: []string{"--body-timeout", "2s", "--max-sessions", "4"}})
		addr := strings.TrimPrefix(strings.TrimSuffix(h.url, "/mcp"), "http://")
		silent := cutAfter(t, addr, 5000, 0)
		drip := cutAfter(t, addr, 5000, time.Second)
		for range 10 {
			resp := rawRequest(t, "GET", h.url, nil, "")
			resp.Body.Close()
		}
		status, _ := post(t, h.url, nil, initializeBody)
		broken := 0
		for _, d := range []time.Duration{silent, drip} {
			if d < 0 || d > 10*time.Second {
				broken++
			}
		}
		if status != 200 {
			broken++
			t.Errorf("initialize after 10 session-less GETs: %d", status)
		}
		if broken > 0 {
			t.Errorf("bodies cut after %v (silent) and %v (drip), want about 2 s", silent, drip)
		}
		recordPromise(promiseFigure{Class: "HTTP time limits: slow bodies and session-less GETs (--body-timeout 2s, --max-sessions 4)", Tried: 12, Broken: broken,
			Measured: fmt.Sprintf("a body declared and never sent cut at %.1f s, one dripping a byte a second at %.1f s; after 10 session-less GETs, initialize answers %d", silent.Seconds(), drip.Seconds(), status)})
	})

	t.Run("stdio fairness", func(t *testing.T) {
		s := start(t, startOptions{})
		ctr := s.container()
		if res := s.call("write_file", map[string]any{"file_path": "q.txt", "content": "quick\n"}); res.IsError {
			t.Fatal(textOf(res))
		}
		begin := time.Now()
		s.call("read_file", map[string]any{"file_path": "q.txt"})
		alone := time.Since(begin)
		const long = 8
		var wg sync.WaitGroup
		for range long {
			wg.Go(func() { _, _ = s.client.CallTool(context.Background(), shellRequest("sleep", "15")) })
		}
		waitUntil(t, 10*time.Second, "the long calls to start", func() bool {
			out, _ := podman(t, "exec", ctr, "sh", "-c", "ps -o args | grep -c '^sleep 15'")
			return strings.TrimSpace(out) == fmt.Sprint(long)
		})
		begin = time.Now()
		res := s.call("read_file", map[string]any{"file_path": "q.txt"})
		during := time.Since(begin)
		out, _ := podman(t, "exec", ctr, "sh", "-c", "ps -o args | grep -c '^sleep 15'")
		broken := 0
		if res.IsError || strings.TrimSpace(out) != fmt.Sprint(long) {
			broken++
			t.Errorf("read_file was not answered while the long calls ran (%s sleeps left): %s", out, textOf(res))
		}
		wg.Wait()
		lines, _ := rawSession(t, []string{
			initializeLine,
			`{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"write_file","arguments":{"file_path":"x","content":"` + strings.Repeat("x", 64<<20) + `"}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		}, 4)
		all := strings.Join(lines, "\n")
		for _, want := range []string{`"id":18446744073709551616,`, `"id":"big","error"`, `"id":3,`} {
			if !strings.Contains(all, want) {
				broken++
				t.Errorf("no answer with %s:\n%.3000s", want, all)
			}
		}
		recordPromise(promiseFigure{Class: "stdio fairness: quick calls among long ones; ids and line sizes", Tried: long + 4, Broken: broken,
			Measured: fmt.Sprintf("read_file answered in %d ms with %d podman_shell calls of 15 s in flight (%d ms alone); id 2^64 came back as sent; a 64 MiB line got an error naming its id and the session went on",
				during.Milliseconds(), long, alone.Milliseconds())})
	})
}

// initializeLine opens a stdio session.
const initializeLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// cutAfter sends a POST that declares size bytes and sends one every
// interval (none when 0), and returns how long until the server ends it.
func cutAfter(t *testing.T, addr string, size int, interval time.Duration) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	begin := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, size)
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(conn))
		close(ended)
	}()
	var tick <-chan time.Time
	if interval > 0 {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case <-ended:
			return time.Since(begin)
		case <-tick:
			_, _ = conn.Write([]byte("{"))
		case <-time.After(60 * time.Second):
			t.Errorf("a slow body to %s was not cut within 60 s", addr)
			return -1
		}
	}
}

package integration

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// hostCanary is a root-only file on the host that no session may read or change.
type hostCanary struct {
	path, token string
	sum         [32]byte
	mtime       time.Time
}

func newHostCanary(t *testing.T) *hostCanary {
	c := &hostCanary{path: filepath.Join(t.TempDir(), "canary.txt"), token: "HOSTCANARY" + randomHex(8)}
	if err := os.WriteFile(c.path, []byte(c.token), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(c.path)
	c.sum, c.mtime = sha256.Sum256([]byte(c.token)), fi.ModTime()
	return c
}

func (c *hostCanary) changed() bool {
	b, err := os.ReadFile(c.path)
	fi, serr := os.Stat(c.path)
	return err != nil || serr != nil || sha256.Sum256(b) != c.sum || !fi.ModTime().Equal(c.mtime)
}

func TestReliabilityEscapes(t *testing.T) {
	host := newHostCanary(t)
	p := start(t, startOptions{})
	token := "BOXCANARY" + randomHex(8)
	// Outside /workspace in the container: a readable canary and a writable directory.
	p.run("sh", "-c", fmt.Sprintf(`echo %s > /tmp/canary.txt && mkdir /tmp/outside-w && echo keep > /tmp/outside-w/keep &&
		ln -s / root && ln -s /proc/self/root p && ln -s ../../.. up && ln -s /tmp t && ln -s %s h && ln -s %s hd &&
		ln -s /tmp/outside-w/keep keeplink && ln -s /dev/zero z && mkfifo f && mkdir d && echo inside > d/canary.txt;
		ln /tmp/canary.txt hard 2>/dev/null; mknod dev c 1 5 2>/dev/null; true`, token, host.path, filepath.Dir(host.path)))

	tried, leaks := 0, 0
	attack := func(tool string, args map[string]any) {
		tried++
		res := p.call(tool, args)
		if text := textOf(res); strings.Contains(text, token) || strings.Contains(text, host.token) {
			leaks++
			t.Errorf("%s %v returned a canary: %.200s", tool, args, text)
		}
	}
	for _, via := range []string{"root/tmp", "p/tmp", "up/tmp", "t", "h", "hd", "z", "f", "hard", "dev"} {
		attack("read_file", map[string]any{"file_path": via + "/canary.txt"})
		attack("read_file", map[string]any{"file_path": via})
		attack("ls", map[string]any{"path": via})
		attack("glob", map[string]any{"pattern": "**/*", "path": via})
		attack("grep", map[string]any{"pattern": "CANARY", "path": via})
		attack("write_file", map[string]any{"file_path": via + "/outside-w/pwn", "content": "x"})
		attack("write_file", map[string]any{"file_path": via + "/pwn", "content": "x"})
		attack("edit_file", map[string]any{"file_path": via + "/canary.txt", "old_string": "C", "new_string": "X"})
		attack("rm", map[string]any{"path": via + "/outside-w/keep"})
	}
	attack("grep", map[string]any{"pattern": "CANARY"}) // the whole workspace, links and fifo included
	attack("glob", map[string]any{"pattern": "**/canary.txt"})
	attack("rm", map[string]any{"path": "keeplink"}) // removes the link, never its target

	// A race: d flips between a directory and a link out while the tools use it.
	var wg sync.WaitGroup
	wg.Go(func() {
		var req mcp.CallToolRequest
		req.Params.Name = "podman_shell"
		req.Params.Arguments = map[string]any{"timeout_seconds": 20, "command": []string{"sh", "-c",
			`mv d realdir; i=0; while [ ! -e stop ] && [ $i -lt 100000 ]; do ln -s /tmp d; rm d; mv realdir d; mv d realdir; i=$((i+1)); done; mv realdir d 2>/dev/null; true`}}
		_, _ = p.client.CallTool(t.Context(), req)
	})
	raced := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); raced++ {
		attack("read_file", map[string]any{"file_path": "d/canary.txt"})
		attack("write_file", map[string]any{"file_path": "d/outside-w/pwn", "content": "x"})
	}
	p.run("touch", "stop")
	wg.Wait()

	// Through /proc: no file tool reaches it, and the shell cannot write it.
	procWrites := p.run("sh", "-c", "for f in /proc/sysrq-trigger /proc/sys/kernel/sysrq /proc/1/oom_score_adj; do echo 1 > $f 2>/dev/null && echo WROTE $f; done; true").Stdout
	after := p.run("sh", "-c", "cat /tmp/canary.txt; ls /tmp/outside-w; cat /tmp/outside-w/keep").Stdout
	changes := 0
	if strings.Contains(procWrites, "WROTE") {
		changes++
		t.Errorf("writes through /proc succeeded: %s", procWrites)
	}
	if after != token+"\nkeep\nkeep\n" {
		changes++
		t.Errorf("the in-container canaries changed: %q", after)
	}
	if host.changed() {
		changes++
		t.Errorf("the host canary changed")
	}
	t.Logf("%d escape attempts (%d during the swap race): %d canary leaks, %d canary changes", tried, raced*2, leaks, changes)
	suite.record(func(f *figures) { f.Escapes = escapeFigures{Tried: tried, Leaks: leaks, HostChanges: changes} })
}

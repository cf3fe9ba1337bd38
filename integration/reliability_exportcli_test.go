package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exportRun is one run of `wink-mcp export`.
type exportRun struct {
	stdout, stderr string
	code           int
}

// exportCLI runs `wink-mcp export --cache-dir cache ARGS`.
func exportCLI(t *testing.T, cache string, args ...string) exportRun {
	t.Helper()
	cmd := exec.Command(winkBin, append([]string{"export", "--cache-dir", cache}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running wink-mcp export: %v", err)
	}
	return exportRun{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// sessionHashOf returns the hash the server's log gives the session of
// container name, once a session took it or made it.
func sessionHashOf(t *testing.T, p *proc, name string) string {
	t.Helper()
	key := strings.TrimPrefix(name, p.prefix+"-")
	for _, rec := range p.logs.records() {
		if s, _ := rec["session"].(string); rec["container"] == name && s != "" && s != key {
			return s
		}
	}
	if rec := p.logs.find("workspace created", map[string]any{"container": name}); rec != nil {
		return rec["session"].(string)
	}
	t.Fatalf("no log names the session of %s", name)
	return ""
}

// exportChecks counts the tries of a promise row and fails the test on each broken one.
type exportChecks struct {
	t             *testing.T
	tried, broken int
}

func (c *exportChecks) check(ok bool, format string, args ...any) {
	c.t.Helper()
	c.tried++
	if !ok {
		c.broken++
		c.t.Errorf(format, args...)
	}
}

// noInternals says whether none of the pooled containers' keys (but those
// of sessions) shows in out.
func noInternals(p *proc, out string, sessions ...string) bool {
	for _, name := range p.pooledNames() {
		key := strings.TrimPrefix(name, p.prefix+"-")
		taken := false
		for _, s := range sessions {
			taken = taken || strings.TrimPrefix(s, p.prefix+"-") == key
		}
		if !taken && strings.Contains(out, key) {
			return false
		}
	}
	return true
}

// TestReliabilityExportCLI tries `wink-mcp export` and `wink-mcp
// workspaces` as a new user would after a day's work: against an HTTP
// server with a warm pool (whose waiting containers are no sessions),
// with sessions that changed nothing or only mount read-only, after the
// server was killed with SIGKILL, and with a kept workspace, open and
// closed. Each answer is a patch, or a sentence that names the sessions
// by the hash their logs give them and the flag that picks each.
func TestReliabilityExportCLI(t *testing.T) {
	c := &exportChecks{t: t}

	t.Run("warm pool with busy and idle sessions then SIGKILL", func(t *testing.T) {
		c.t = t
		root, folder := project(t)
		p := launch(t, startOptions{transport: "http", args: []string{"--warm", "2", "--mount", folder, "--allowed-root", root}})
		p.waitPooled(2)
		r := exportCLI(t, p.cache)
		c.check(r.code == 1 && r.stdout == "" && strings.Contains(r.stderr, "no session or kept workspace with mounted folders") && noInternals(p, r.stderr),
			"warm containers only: exit %d, stderr %q; want 1 and no session", r.code, r.stderr)

		p.connect(nil)
		a := p
		b := p.sibling(nil, "")
		nameA, nameB := a.container(), b.container()
		a.run("sh", "-c", "echo from-a >> proj/README.md")
		b.run("ls", "proj")
		hashA, hashB := sessionHashOf(t, p, nameA), sessionHashOf(t, p, nameB)
		r = exportCLI(t, p.cache)
		c.check(r.code == 0 && strings.Contains(r.stdout, "+from-a") && strings.Contains(r.stderr, "only session "+hashA+" changed them") && noInternals(p, r.stderr, nameA, nameB),
			"one busy and one idle session: exit %d, stderr %q, stdout %q; want session %s's patch", r.code, r.stderr, r.stdout, hashA)

		b.run("sh", "-c", "echo from-b >> proj/README.md")
		r = exportCLI(t, p.cache)
		c.check(r.code == 2 && r.stdout == "" && strings.Count(r.stderr, "\n") == 3 &&
			strings.Contains(r.stderr, "--session "+hashA) && strings.Contains(r.stderr, "--session "+hashB) &&
			strings.Contains(r.stderr, "choose one with the flag on its line") && noInternals(p, r.stderr),
			"two busy sessions: exit %d, stderr %q; want 2 and both sessions by the flag that picks them, nothing else", r.code, r.stderr)
		for hash, want := range map[string]string{hashA[:6]: "+from-a", hashB: "+from-b"} {
			r = exportCLI(t, p.cache, "--session", hash)
			c.check(r.code == 0 && strings.Contains(r.stdout, want), "--session %s: exit %d, stderr %q, stdout %q", hash, r.code, r.stderr, r.stdout)
		}
		r = exportCLI(t, p.cache, "--session", "fffffffff")
		c.check(r.code == 1 && strings.Contains(r.stderr, "starts with fffffffff"), "an unknown --session: exit %d, stderr %q", r.code, r.stderr)

		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p.waitExit(10 * time.Second)
		r = exportCLI(t, p.cache)
		c.check(r.code == 2 && strings.Count(r.stderr, "ended, started") == 2 && strings.Contains(r.stderr, "--session "+hashA) && noInternals(p, r.stderr),
			"after SIGKILL: exit %d, stderr %q; want both sessions, ended", r.code, r.stderr)
		r = exportCLI(t, p.cache, "--session", hashA)
		c.check(r.code == 0 && strings.Contains(r.stdout, "+from-a"), "after SIGKILL, --session: exit %d, stderr %q", r.code, r.stderr)
		out, err := workspacesCLI(t, p.cache)
		c.check(err == nil && strings.HasPrefix(out, "no kept workspaces under "), "workspaces after SIGKILL: %v %q", err, out)

		// The next server sweeps the dead one's containers, disks and files.
		next := launch(t, startOptions{transport: "http", cache: p.cache, args: unpooled})
		next.waitLog(time.Minute, "orphan sweep done", nil)
		r = exportCLI(t, p.cache)
		c.check(r.code == 1 && strings.Contains(r.stderr, "no session"), "after the sweep: exit %d, stderr %q", r.code, r.stderr)
	})

	t.Run("sessions that changed nothing", func(t *testing.T) {
		c.t = t
		root, folder := project(t)
		p := start(t, startOptions{args: []string{"--mount", folder, "--allowed-root", root}})
		p.run("ls", "proj")
		r := exportCLI(t, p.cache)
		c.check(r.code == 0 && r.stdout == "" && strings.Contains(r.stderr, "changed nothing in "+folder),
			"an idle session: exit %d, stderr %q, stdout %q", r.code, r.stderr, r.stdout)
		out := t.TempDir()
		r = exportCLI(t, p.cache, "--out", out)
		entries, _ := os.ReadDir(out)
		c.check(r.code == 0 && len(entries) == 0 && strings.Contains(r.stderr, "no patch written"), "an idle session, --out: exit %d, stderr %q, %d entries", r.code, r.stderr, len(entries))

		ro := start(t, startOptions{args: []string{"--mount", folder + ":ro", "--allowed-root", root}})
		ro.run("ls", "proj")
		r = exportCLI(t, ro.cache)
		c.check(r.code == 0 && r.stdout == "" && strings.Contains(r.stderr, "read-only") && strings.Contains(r.stderr, "nothing to export"),
			"a read-only mount: exit %d, stderr %q", r.code, r.stderr)
	})

	t.Run("a kept workspace open then closed", func(t *testing.T) {
		c.t = t
		root, folder := project(t)
		p := start(t, startOptions{args: []string{"--workspace", "kw", "--mount", folder, "--allowed-root", root}})
		p.run("sh", "-c", "echo kept >> proj/README.md")
		r := exportCLI(t, p.cache)
		c.check(r.code == 0 && strings.Contains(r.stdout, "+kept") && strings.Contains(r.stderr, "kept workspace kw"), "open: exit %d, stderr %q", r.code, r.stderr)
		out, err := workspacesCLI(t, p.cache, "show", "kw")
		c.check(err == nil && strings.Contains(out, "mounts     "+folder+" at /workspace/proj (overlay)") && strings.Contains(out, "--workspace kw"),
			"workspaces show while open: %v\n%s", err, out)
		p.endSession()

		r = exportCLI(t, p.cache)
		c.check(r.code == 0 && strings.Contains(r.stdout, "+kept"), "closed: exit %d, stderr %q", r.code, r.stderr)
		dir := t.TempDir()
		r = exportCLI(t, p.cache, "--workspace", "kw", "--out", dir)
		c.check(r.code == 0 && fileExists(filepath.Join(dir, "proj.patch")), "--workspace kw --out: exit %d, stderr %q", r.code, r.stderr)
		r = exportCLI(t, p.cache, "--workspace", "nope")
		c.check(r.code == 1 && strings.Contains(r.stderr, `no kept workspace "nope"`), "--workspace nope: exit %d, stderr %q", r.code, r.stderr)
		r = exportCLI(t, p.cache, "--workspace", "kw", "--session", "ab")
		c.check(r.code == 2 && strings.Contains(r.stderr, "give one of them"), "--workspace and --session: exit %d, stderr %q", r.code, r.stderr)
		mounts, _ := os.ReadFile("/proc/self/mounts")
		c.check(!strings.Contains(string(mounts), p.cache), "the export left a disk mounted under %s", p.cache)
		out, err = workspacesCLI(t, p.cache, "show", "kw")
		c.check(err == nil && strings.Contains(out, "state      free") && strings.Contains(out, "mounts     "+folder), "workspaces show when closed: %v\n%s", err, out)
		// The export gave the workspace back: the next session opens it.
		again := start(t, startOptions{cache: p.cache, args: []string{"--workspace", "kw", "--mount", folder, "--allowed-root", root}})
		got := again.run("cat", "proj/README.md")
		c.check(strings.HasSuffix(got.Stdout, "kept\n"), "the workspace reopened after the export holds %q", got.Stdout)
	})

	recordPromise(promiseFigure{Class: "wink-mcp export and wink-mcp workspaces as a new user runs them: an HTTP server with --warm 2 (pooled containers no session took), " +
		"one busy and one idle session, two busy ones, the server killed with SIGKILL then swept, sessions that changed nothing or mount read-only, a kept workspace open and closed",
		Tried: c.tried, Broken: c.broken,
		Measured: fmt.Sprintf("%d answers checked (exit code, patch, sessions named by their logged hash with the flag that picks each, no pooled container listed): %d wrong", c.tried, c.broken)})
}

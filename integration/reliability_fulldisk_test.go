package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/tools"
)

// The calls a full disk's advice gives, as a model would read them.
var (
	adviceRm     = regexp.MustCompile(`\brm path=([^ ,;)]+)`)
	adviceForget = regexp.MustCompile(`\bjob action=forget id=([^ ,;)]+)`)
	adviceTmp    = regexp.MustCompile(`(/tmp/[^ ,;)]+) \(`)
)

// fillCase is one way a model fills a disk: the call that fills it
// returns the advice, and following it must free the disk.
type fillCase struct {
	name string
	// fill fills a disk and returns the call's disk_full advice and text.
	fill func(p *proc) (advice, text string)
	// free follows the advice.
	free func(p *proc, advice string) error
}

// freeByRm removes what the advice names with the rm tool.
func freeByRm(p *proc, advice string) error {
	m := adviceRm.FindStringSubmatch(advice)
	if m == nil {
		return fmt.Errorf("the advice names nothing to rm: %s", advice)
	}
	if res := p.call("rm", map[string]any{"path": m[1]}); res.IsError {
		return fmt.Errorf("rm %s: %s", m[1], textOf(res))
	}
	return nil
}

// shellFill runs a command that fills a disk.
func shellFill(script string) func(p *proc) (string, string) {
	return func(p *proc) (string, string) {
		res := p.call("podman_shell", map[string]any{"command": []string{"sh", "-c", script}, "timeout_seconds": 120})
		var out tools.ShellResult
		decodeStructured(p.t, res, &out)
		return out.DiskFull, textOf(res)
	}
}

// jobFill runs a job that fills a disk and returns the advice of its
// status once it ended.
func jobFill(p *proc, args map[string]any) (string, string) {
	id := p.shell(args).Job
	j := p.waitJob(id, 2*time.Minute)
	res := p.call("job", map[string]any{"action": "status", "id": id})
	return j.DiskFull, textOf(res)
}

// fillCases are every way the test fills a disk: /workspace by a command,
// by Python, by a job's file and by a job's output; /tmp; the inode table.
var fillCases = []fillCase{
	{"a command filling /workspace", shellFill("dd if=/dev/zero of=big bs=1M"), freeByRm},
	{"a command filling /tmp", shellFill("dd if=/dev/zero of=/tmp/fill bs=1M"), func(p *proc, advice string) error {
		m := adviceTmp.FindStringSubmatch(advice)
		if m == nil || !strings.Contains(advice, "podman_shell") {
			return fmt.Errorf("the advice names nothing in /tmp, or no podman_shell: %s", advice)
		}
		if res := p.run("rm", "-rf", m[1]); res.ExitCode != 0 {
			return fmt.Errorf("rm -rf %s: %s", m[1], res.Stderr)
		}
		return nil
	}},
	{"a command using every inode", shellFill("mkdir many && cd many && seq 30000 | xargs touch"), freeByRm},
	{"evaluate_python filling /workspace", func(p *proc) (string, string) {
		res := p.call("evaluate_python", map[string]any{"code": "f = open('py.bin', 'wb')\nwhile True:\n    f.write(b'x' * 1048576)\n    f.flush()"})
		var out tools.PythonResult
		decodeStructured(p.t, res, &out)
		return out.DiskFull, textOf(res)
	}, freeByRm},
	{"a job filling /workspace", func(p *proc) (string, string) {
		return jobFill(p, map[string]any{"command": []string{"sh", "-c", "dd if=/dev/zero of=jobfill bs=1M"}, "background": true})
	}, freeByRm},
	{"a job's output filling /workspace", func(p *proc) (string, string) {
		id := p.fillWithJobOutput()
		res := p.call("job", map[string]any{"action": "status", "id": id})
		var out tools.JobResult
		decodeStructured(p.t, res, &out)
		return out.Job.DiskFull, textOf(res)
	}, func(p *proc, advice string) error {
		m := adviceForget.FindStringSubmatch(advice)
		if m == nil {
			return fmt.Errorf("the advice names no job to forget: %s", advice)
		}
		if res := p.call("job", map[string]any{"action": "forget", "id": m[1]}); res.IsError {
			return fmt.Errorf("forget %s: %s", m[1], textOf(res))
		}
		return nil
	}},
}

// roomLeft checks that /workspace and /tmp take a file again, and that a
// command that leaves them with room gets no advice.
func roomLeft(p *proc) error {
	res := p.run("sh", "-c", "head -c 1048576 /dev/zero > probe && head -c 1048576 /dev/zero > /tmp/probe && mkdir probe.d && rm -r probe probe.d /tmp/probe")
	if res.ExitCode != 0 || res.DiskFull != "" {
		return fmt.Errorf("exit %d, disk_full %q: %s", res.ExitCode, res.DiskFull, res.Stderr)
	}
	return nil
}

// TestReliabilityFullDisks fills every disk a session writes to, the way
// a careless model does: its calls must say what takes the space and what
// frees it, following that must free it, and a full cache disk must
// refuse checkpoints and restores, changing nothing.
func TestReliabilityFullDisks(t *testing.T) {
	t.Run("commands, programs and jobs that fill a disk", func(t *testing.T) {
		p := start(t, startOptions{image: pythonImage, args: []string{"--disk-limit", "64m", "--tmp-size", "16m"}})
		broken := 0
		for _, c := range fillCases {
			advice, text := c.fill(p)
			if advice == "" || !strings.Contains(text, "disk full: ") {
				broken++
				t.Errorf("%s: no advice in the result: %s", c.name, text)
				continue
			}
			if err := c.free(p, advice); err != nil {
				broken++
				t.Errorf("%s: following the advice: %v", c.name, err)
				continue
			}
			if err := roomLeft(p); err != nil {
				broken++
				t.Errorf("%s: after following the advice %q: %v", c.name, advice, err)
			}
		}
		// A job asked about after its disk was freed says it was full.
		id := p.shell(map[string]any{"command": []string{"sh", "-c", "dd if=/dev/zero of=again bs=1M"}, "background": true}).Job
		p.waitJob(id, 2*time.Minute)
		p.call("rm", map[string]any{"path": "again"})
		if j := p.job(map[string]any{"action": "status", "id": id}).Job; !strings.Contains(j.DiskFull, "was full when the job ended") {
			broken++
			t.Errorf("a job asked about after the space was freed: %q", j.DiskFull)
		}
		// Only when the disk is full at the end: a command that found it
		// full and freed what it wrote gets no advice.
		res := p.run("sh", "-c", "dd if=/dev/zero of=big bs=1M; rm big")
		if !strings.Contains(res.Stderr, "No space left") || res.DiskFull != "" {
			broken++
			t.Errorf("a command that filled the disk and freed it: disk_full %q, stderr %s", res.DiskFull, res.Stderr)
		}
		recordPromise(promiseFigure{Class: "full disks: a command, a Python program, a job's file and a job's output filling /workspace (64 MiB), a command filling /tmp (16 MiB) and one using every inode",
			Tried: len(fillCases) + 2, Broken: broken,
			Measured: fmt.Sprintf("each of the %d calls said what took the space and which call frees it (rm path=…, podman_shell rm in /tmp, job action=forget id=…); following it freed the disk every time; a job asked about later said it had been full; a command that freed what it wrote got no advice", len(fillCases))})
	})

	t.Run("a full cache disk refuses checkpoints and restores, changing nothing", func(t *testing.T) {
		cache := t.TempDir()
		if err := unix.Mount("tmpfs", cache, "tmpfs", 0, "size=96m"); err != nil {
			t.Fatalf("mounting a 96 MiB tmpfs as the cache disk: %v", err)
		}
		// Registered before the server's: it runs after the server stops.
		t.Cleanup(func() {
			if err := unix.Unmount(cache, 0); err != nil {
				_ = unix.Unmount(cache, unix.MNT_DETACH)
			}
		})
		// --disk-limit 0: /workspace lives on the cache disk, as it does
		// wherever disks are not limited.
		p := start(t, startOptions{cache: cache, args: []string{"--disk-limit", "0"}})
		p.run("sh", "-c", "echo x > keep && echo s > scratch && head -c 1000000 /dev/urandom > data")
		decodeStructured(t, p.call("workspace_checkpoint", map[string]any{"message": "first"}), &tools.WorkspaceCheckpointResult{})
		p.run("sh", "-c", "echo changed x > keep && head -c 500000 /dev/urandom > unsaved")
		before := p.listingDigest()
		stores, _ := filepath.Glob(filepath.Join(cache, "instances", "*", "stores", "*"))
		if len(stores) != 1 {
			t.Fatalf("the session's checkpoint store under %s: %v", cache, stores)
		}
		storeBefore, _ := storeObjectBytes(stores[0])

		filler := filepath.Join(cache, "filler")
		fillDisk(t, filler)
		broken := 0
		refusal := func(tool string, args map[string]any) {
			res := p.call(tool, args)
			text := textOf(res)
			if !res.IsError || !strings.Contains(text, cache) || !strings.Contains(text, "0 B free") || !strings.Contains(text, "--cache-dir") {
				broken++
				t.Errorf("%s on a full cache disk = %v %s; want an error naming the disk, its free space and what to do", tool, res.IsError, text)
			}
			if strings.Contains(text, "--checkpoint-limit") { // a larger cap frees no disk
				broken++
				t.Errorf("%s on a full cache disk suggests a larger cap: %s", tool, text)
			}
			if got := p.listingDigest(); got != before {
				broken++
				t.Errorf("%s on a full cache disk changed the workspace: %s, was %s", tool, got, before)
			}
			var list tools.WorkspaceCheckpointsResult
			decodeStructured(t, p.call("workspace_checkpoints", nil), &list)
			if len(list.Checkpoints) != 1 {
				broken++
				t.Errorf("%s on a full cache disk left checkpoints: %+v", tool, list.Checkpoints)
			}
			if now, _ := storeObjectBytes(stores[0]); now != storeBefore {
				broken++
				t.Errorf("%s on a full cache disk left %d bytes of objects in the store, was %d", tool, now, storeBefore)
			}
		}
		refusal("workspace_checkpoint", map[string]any{"message": "on a full disk"})
		refusal("workspace_restore", map[string]any{"checkpoint": "c1"})
		// What only reads works while the disk is full.
		reads := map[string]bool{"ls": true, "read_file": true, "glob": true, "grep": true, "podman_shell": true, "job": true, "workspace_checkpoints": true}
		tried := 2
		for _, c := range restoreTools {
			if reads[c.tool] {
				tried++
				if res := p.call(c.tool, c.args); res.IsError {
					broken++
					t.Errorf("%s while the cache disk is full: %s", c.tool, textOf(res))
				}
			}
		}
		must(t, os.Remove(filler))
		for _, c := range restoreTools {
			tried++
			if res := p.call(c.tool, c.args); res.IsError {
				broken++
				t.Errorf("%s after the cache disk was freed: %s", c.tool, textOf(res))
			}
		}
		var r tools.WorkspaceRestoreResult
		if res := p.call("workspace_restore", map[string]any{"checkpoint": "c1"}); res.IsError {
			broken++
			t.Errorf("the restore after the cache disk was freed: %s", textOf(res))
		} else if decodeStructured(t, res, &r); r.Before == "" || p.run("cat", "keep").Stdout != "x\n" {
			broken++
			t.Errorf("the restore after the cache disk was freed = %+v, keep %q", r, p.run("cat", "keep").Stdout)
		}
		recordPromise(promiseFigure{Class: "full cache disk: a checkpoint and a restore with --cache-dir on a 96 MiB filesystem filled to its last byte", Tried: tried + 1, Broken: broken,
			Measured: fmt.Sprintf("both refused naming the disk, its free space and --cache-dir; the workspace, the checkpoint list and the store's objects unchanged; the 7 reading tools worked while it was full, all %d tools and the restore once it was freed", len(restoreTools))})
	})
}

// fillDisk writes path until its filesystem has no byte left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for len(chunk) > 1 { // the last bytes, in smaller writes
		chunk = chunk[:len(chunk)/2]
		_, _ = f.Write(chunk)
	}
	var st unix.Statfs_t
	must(t, unix.Statfs(path, &st))
	if st.Bavail != 0 {
		t.Fatalf("the filesystem of %s still has %d blocks free", path, st.Bavail)
	}
}

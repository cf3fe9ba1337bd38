package integration

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// forkOf forks p's workspace with args and returns the forks.
func forkOf(t *testing.T, p *proc, args map[string]any) []tools.ForkView {
	t.Helper()
	var r tools.WorkspaceForkResult
	decodeStructured(t, p.call("workspace_fork", args), &r)
	return r.Forks
}

// TestForkOverStreamableHTTP forks a workspace with a mounted folder, a
// checkpoint and a running job, over streamable HTTP, and claims the
// forks from other sessions: each has the files and not the job, each
// one's changes to the folder stay its own (its own patch against the
// same host base), the source is unchanged, a fork of a fork and a fork
// from a checkpoint work; another principal's claim, a second claim of a
// handle, a count past --quota-forks and bad arguments are refused, and
// an unclaimed fork is deleted at its expiry.
func TestForkOverStreamableHTTP(t *testing.T) {
	tokA, tokB := randomHex(16), randomHex(16)
	as := map[string]string{"Authorization": "Bearer " + tokA}
	bs := map[string]string{"Authorization": "Bearer " + tokB}
	root, folder := project(t)
	hostBefore := treeDigest(t, folder)
	a := start(t, startOptions{transport: "http", headers: as, args: []string{"--auth-token", tokA, "--auth-token", tokB,
		"--allowed-root", root, "--mount", folder, "--quota-forks", "4"}})
	a.run("sh", "-c", "echo v1 > state.txt")
	decodeStructured(t, a.call("workspace_checkpoint", map[string]any{"message": "v1"}), &tools.WorkspaceCheckpointResult{})
	a.run("sh", "-c", "echo v2 > state.txt && echo source-edit >> proj/README.md")
	job := a.shell(map[string]any{"command": []string{"sh", "-c", "while true; do date >> ticks; sleep 1; done"}, "background": true})

	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"count": 0}, "count"},
		{map[string]any{"count": 17}, "count"},
		{map[string]any{"count": 1, "depth": 2}, "depth"},
		{map[string]any{"count": 1, "checkpoint": "c99"}, "no such checkpoint"},
		{map[string]any{"count": 5}, "limit of 4 forks"},
	} {
		if res := a.call("workspace_fork", bad.args); !res.IsError || !strings.Contains(textOf(res), bad.want) {
			t.Errorf("workspace_fork %v = %s, want an error naming %q", bad.args, textOf(res), bad.want)
		}
	}
	forks := forkOf(t, a, map[string]any{"count": 2})
	if len(forks) != 2 || forks[0].Handle == forks[1].Handle || forks[0].Workspace == forks[1].Workspace {
		t.Fatalf("forks = %+v", forks)
	}
	if res := a.sibling(bs, "").call("workspace_attach", map[string]any{"handle": forks[0].Handle}); !strings.Contains(textOf(res), "the handle is not accepted") {
		t.Errorf("another principal's claim = %s", textOf(res))
	}
	f1, f2 := a.sibling(as, ""), a.sibling(as, "")
	decodeStructured(t, f1.call("workspace_attach", map[string]any{"handle": forks[0].Handle}), &tools.WorkspaceAttachResult{})
	decodeStructured(t, f2.call("workspace_attach", map[string]any{"handle": forks[1].Handle}), &tools.WorkspaceAttachResult{})
	if res := a.sibling(as, "").call("workspace_attach", map[string]any{"handle": forks[0].Handle}); !strings.Contains(textOf(res), "the handle is not accepted") {
		t.Errorf("a second claim of one handle = %s", textOf(res))
	}
	for i, f := range []*proc{f1, f2} {
		if got := f.run("cat", "state.txt", "proj/README.md").Stdout; got != "v2\n# proj\n\nsome text\nsource-edit\n" {
			t.Errorf("fork %d's files = %q", i+1, got)
		}
		if status := textOf(f.call("job", map[string]any{"action": "list"})); strings.Contains(status, job.Job) {
			t.Errorf("fork %d carried the source's job: %s", i+1, status)
		}
		f.run("sh", "-c", "echo fork-"+string(rune('1'+i))+" >> proj/README.md")
	}
	for i, f := range []*proc{f1, f2} {
		diff := textOf(f.call("workspace_diff", map[string]any{}))
		mine, theirs := "+fork-"+string(rune('1'+i)), "+fork-"+string(rune('2'-i))
		if !strings.Contains(diff, mine) || strings.Contains(diff, theirs) || !strings.Contains(diff, "+source-edit") {
			t.Errorf("fork %d's patch:\n%s", i+1, diff)
		}
	}
	if diff := textOf(a.call("workspace_diff", map[string]any{})); strings.Contains(diff, "+fork-") {
		t.Errorf("the source's patch has a fork's change:\n%s", diff)
	}
	if got := a.run("cat", "state.txt").Stdout; got != "v2\n" {
		t.Errorf("the source's state.txt = %q", got)
	}
	if status := textOf(a.call("job", map[string]any{"action": "status", "id": job.Job})); !strings.Contains(status, "running") {
		t.Errorf("the source's job after forking: %s", status)
	}

	// A fork of a fork, and a fork from a checkpoint of the source.
	grand := forkOf(t, f1, map[string]any{"count": 1})
	g := a.sibling(as, "")
	decodeStructured(t, g.call("workspace_attach", map[string]any{"handle": grand[0].Handle}), &tools.WorkspaceAttachResult{})
	if got := g.run("tail", "-n1", "proj/README.md").Stdout; got != "fork-1\n" {
		t.Errorf("a fork of fork 1 ends its README with %q", got)
	}
	fromCP := forkOf(t, a, map[string]any{"count": 1, "checkpoint": "c1"})
	c := a.sibling(as, "")
	decodeStructured(t, c.call("workspace_attach", map[string]any{"handle": fromCP[0].Handle}), &tools.WorkspaceAttachResult{})
	if got := c.run("cat", "state.txt").Stdout; got != "v1\n" {
		t.Errorf("a fork from c1 has state.txt %q", got)
	}

	// An unclaimed fork goes at its expiry, and takes nothing with it.
	short := forkOf(t, a, map[string]any{"count": 1, "expires_in_seconds": 1})
	dir := filepath.Join(a.cache, "workspaces", short[0].Workspace)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the fork's files: %v", err)
	}
	waitUntil(t, 15*time.Second, "the unclaimed fork to be deleted", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
	if res := a.sibling(as, "").call("workspace_attach", map[string]any{"handle": short[0].Handle}); !strings.Contains(textOf(res), "the handle is not accepted") {
		t.Errorf("an expired fork's handle = %s", textOf(res))
	}
	if treeDigest(t, folder) != hostBefore {
		t.Error("the host folder changed")
	}
}

// TestForkOnStdioToAnotherProcess forks a stdio session's workspace while
// write_file and a command rewrite files, and claims the fork from another
// process: every file is whole (the old or the new content, never part of
// each), and the fork's disk is bounded (--quota-fork-bytes) while the
// source keeps working; a fork whose maker ended goes at the next start
// after its expiry.
func TestForkOnStdioToAnotherProcess(t *testing.T) {
	cache := t.TempDir()
	a := start(t, startOptions{cache: cache, args: []string{"--quota-fork-bytes", "200m", "--quota-forks", "64"}})
	a.run("sh", "-c", "head -c 40000 /dev/zero | tr '\\0' a > big.txt")
	job := a.shell(map[string]any{"command": []string{"sh", "-c",
		"i=0; while true; do i=$((i+1)); head -c 4194304 /dev/zero | tr '\\0' x > new.tmp && mv new.tmp renamed.txt; done"}, "background": true})
	big := map[bool]string{true: strings.Repeat("a", 40000), false: strings.Repeat("b", 40000)}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // write_file alternates the whole file while the fork is made
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if res := a.call("write_file", map[string]any{"file_path": "big.txt", "content": big[i%2 == 1]}); res.IsError {
				t.Errorf("write_file during the fork: %s", textOf(res))
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	forks := forkOf(t, a, map[string]any{"count": 1})
	close(stop)
	wg.Wait()
	b := start(t, startOptions{cache: cache})
	decodeStructured(t, b.call("workspace_attach", map[string]any{"handle": forks[0].Handle}), &tools.WorkspaceAttachResult{})
	t.Logf("a fork takes %d bytes", forks[0].Bytes)
	check := `for f in big.txt renamed.txt; do [ -e "$f" ] || continue; n=$(wc -c < "$f"); u=$(tr -d "$(head -c1 "$f")" < "$f" | wc -c); echo "$f $n $u"; done`
	size := map[string]string{"big.txt": "40000", "renamed.txt": "4194304"}
	lines := strings.Split(strings.TrimSpace(b.run("sh", "-c", check).Stdout), "\n")
	if len(lines) != 2 {
		t.Errorf("the fork's files: %q, want big.txt and renamed.txt", lines)
	}
	for _, line := range lines {
		if f := strings.Fields(line); len(f) != 3 || f[1] != size[f[0]] || f[2] != "0" {
			t.Errorf("a file in the fork is not whole (name, bytes, bytes unlike the first): %q", line)
		}
	}
	if res := b.call("job", map[string]any{"action": "list"}); strings.Contains(textOf(res), job.Job) {
		t.Errorf("the fork carried the source's job: %s", textOf(res))
	}
	// Forks that would fill the disk stop at the quota, and the source works on.
	var refused string
	for range 20 {
		res := a.call("workspace_fork", map[string]any{"count": 4})
		if res.IsError {
			refused = textOf(res)
			break
		}
	}
	if !strings.Contains(refused, "--quota-fork-bytes") {
		t.Errorf("forks past the disk quota: %q", refused)
	}
	if got := a.run("echo", "alive").Stdout; got != "alive\n" {
		t.Errorf("the source after the forks: %q", got)
	}
	// A fork its maker's process left behind goes at the next start after
	// its expiry, as a handed-over workspace does.
	late := forkOf(t, b, map[string]any{"count": 1, "expires_in_seconds": 1})
	b.endSession()
	time.Sleep(1500 * time.Millisecond)
	dir := filepath.Join(cache, "workspaces", late[0].Workspace)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the fork left by an ended process: %v", err)
	}
	start(t, startOptions{cache: cache})
	waitUntil(t, 15*time.Second, "the next start to delete the expired fork", func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
}

// TestRootlessForkOfAWorkspace forks a rootless Podman workspace (no disk image: its
// tree is copied with its owners, the user's subordinate uids) and claims
// the fork in another rootless process: the fork's user can change the
// files it made in the source, and the source is unchanged.
func TestRootlessForkOfAWorkspace(t *testing.T) {
	u := needRootless(t)
	cache := u.dir(t)
	a := start(t, startOptions{as: u, cache: cache, env: u.shellEnv(t), args: rootlessArgs})
	a.run("sh", "-c", "mkdir -p src/deep && echo source > src/deep/f && chmod 600 src/deep/f && ln -s deep/f src/link && mkfifo src/pipe")
	forks := forkOf(t, a, map[string]any{"count": 2, "expires_in_seconds": 3})
	b := start(t, startOptions{as: u, cache: cache, env: u.shellEnv(t), args: rootlessArgs})
	decodeStructured(t, b.call("workspace_attach", map[string]any{"handle": forks[0].Handle}), &tools.WorkspaceAttachResult{})
	res := b.run("sh", "-c", "cat src/link && stat -c '%a %U' src/deep/f && [ -p src/pipe ] && echo fork >> src/deep/f && cat src/deep/f")
	if res.ExitCode != 0 || res.Stdout != "source\n600 nobody\nsource\nfork\n" {
		t.Errorf("in the rootless fork: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if got := a.run("cat", "src/deep/f").Stdout; got != "source\n" {
		t.Errorf("the source after the fork changed: %q", got)
	}
	// The unclaimed fork goes at its expiry, files of subordinate uids and all.
	unclaimed := filepath.Join(cache, "workspaces", forks[1].Workspace)
	waitUntil(t, 20*time.Second, "the unclaimed rootless fork to be deleted", func() bool {
		_, err := os.Stat(unclaimed)
		return os.IsNotExist(err)
	})
	b.endSession()
	a.endSession()
	if left := u.notTheUsers(cache); len(left) > 0 {
		t.Errorf("files of the container's users are left in the rootless cache: %v", left)
	}
}

// TestForkKeepsTheSourcesProfileAndHardening: a fork of a workspace that
// switched to a profile with its own limits is claimed in another process
// whose default is no profile: the fork's container has the source's
// image, limits and hardening, as Podman reports them after creation.
func TestForkKeepsTheSourcesProfileAndHardening(t *testing.T) {
	file, _ := profilesFile(t, "profiles:\n  small:\n    description: small\n    image: IMAGE\n    limits:\n      memory: 96m\n      pids: 100\n")
	cache := t.TempDir()
	a := start(t, startOptions{cache: cache, args: []string{"--profiles", file}})
	a.useProfile("small", true)
	a.run("sh", "-c", "echo small > which")
	forks := forkOf(t, a, map[string]any{"count": 1})
	b := start(t, startOptions{cache: cache, args: []string{"--profiles", file}})
	decodeStructured(t, b.call("workspace_attach", map[string]any{"handle": forks[0].Handle}), &tools.WorkspaceAttachResult{})
	if got := b.run("cat", "which").Stdout; got != "small\n" {
		t.Fatalf("the fork's file: %q", got)
	}
	format := "{{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.Config.Image}} {{.Config.User}} {{.HostConfig.NetworkMode}} " +
		"{{.HostConfig.CapDrop}} {{.HostConfig.CapAdd}} {{.EffectiveCaps}} {{.HostConfig.SecurityOpt}} {{.HostConfig.CpuQuota}} {{.HostConfig.CpuPeriod}} {{.HostConfig.Privileged}}"
	source, err := podman(t, "inspect", "--format", format, a.container())
	if err != nil {
		t.Fatal(err)
	}
	fork, err := podman(t, "inspect", "--format", format, b.container())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(source, "100663296 100 ") || fork != source {
		t.Errorf("the fork's container: %q\nthe source's: %q\nwant the same, with the profile's 96 MiB and 100 pids", fork, source)
	}
}

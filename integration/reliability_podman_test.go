package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// TestReliabilityPodman tries, through the real binary and Podman, the
// promises about how the server uses Podman and this machine: an image
// that cannot be pulled, commands the memory limit kills, the Podman
// connections a user configured, what workspace_info reports, the helper
// programs the server runs here under the user's own environment.
func TestReliabilityPodman(t *testing.T) {
	t.Run("helper commands under the user's environment", func(t *testing.T) {
		tried, broken := tryHostileEnvironment(t)
		recordPromise(promiseFigure{Class: "helper programs under the user's environment: a server whose environment has CONTAINER_HOST, CONTAINER_CONNECTION, CONTAINERS_CONF, MKE2FS_CONFIG, LIBMOUNT_FSTAB and GIT_CONFIG_COUNT set; a rootless session with an overlay whose cleanup needs podman unshare",
			Tried: tried, Broken: broken,
			Measured: fmt.Sprintf("%d sessions, %d changed by the environment: each disk made as asked (100 files written in a 64 MiB disk), the git identity the user's own, no file of another uid left in the rootless cache", tried, broken)})
	})
	t.Run("workspace info", func(t *testing.T) {
		tried, broken := tryWorkspaceInfo(t)
		recordPromise(promiseFigure{Class: "workspace_info through a workspace's life: before its container, with a job, a checkpoint, a port and written files, its container removed behind its back, after podman_shell action=stop",
			Tried: tried, Broken: broken,
			Measured: fmt.Sprintf("%d states asked, %d reported wrong or changed by asking; no container made or started to answer", tried, broken)})
	})
	t.Run("podman connections", func(t *testing.T) {
		tried, broken := tryConnections(t)
		recordPromise(promiseFigure{Class: "podman connections: the service chosen by containers.conf's and podman-connections.json's default, CONTAINER_CONNECTION, --podman-connection and CONTAINER_HOST together, and a name that does not exist",
			Tried: tried, Broken: broken,
			Measured: fmt.Sprintf("%d servers started, %d on the wrong service or not refused; the local and the remote (ssh) host each reached through its connection, the unknown name refused at start listing the known ones", tried, broken)})
	})
	t.Run("out of memory", func(t *testing.T) {
		tried, broken := tryOutOfMemory(t)
		recordPromise(promiseFigure{Class: "out of memory: a memory bomb under --memory 128m in the foreground, as a job and as one process of a command, against kill -9 by the model",
			Tried: tried, Broken: broken,
			Measured: fmt.Sprintf("%d commands and jobs, %d told wrong: each OOM kill named with the limit (exit 137), the kill -9s not", tried, broken)})
	})
	t.Run("a pull that fails", func(t *testing.T) {
		image := "localhost/wink-no-such-image-" + randomHex(4) + ":1"
		p := start(t, startOptions{image: image})
		pulls := func() int {
			n := 0
			for _, rec := range p.logs.records() {
				if rec["msg"] == "pulling image" && rec["image"] == image {
					n++
				}
			}
			return n
		}
		const calls = 12
		backedOff, broken := 0, 0
		var first string
		for i := range calls {
			res := p.call("podman_shell", map[string]any{"command": []string{"true"}})
			text := textOf(res)
			switch {
			case !res.IsError || !strings.Contains(text, image) || !strings.Contains(text, "connection refused"):
				broken++
				t.Errorf("call %d: %q; want the pull's own error", i, text)
			case strings.Contains(text, "not tried again before"):
				backedOff++
			case first == "":
				first = text
			}
		}
		if n := pulls(); n != 1 {
			broken += n - 1
			t.Errorf("%d calls pulled %d times; want one pull, then the back-off", calls, n)
		}
		if backedOff < calls-1 {
			t.Errorf("%d of %d calls answered with the back-off; want all but the first (first: %q)", backedOff, calls, first)
		}
		// The back-off ends: a call then pulls again.
		retried := pulls()
		waitUntil(t, 2*time.Minute, "a pull after the first back-off", func() bool {
			p.call("podman_shell", map[string]any{"command": []string{"true"}})
			retried = pulls()
			if retried < 2 {
				time.Sleep(500 * time.Millisecond)
			}
			return retried >= 2
		})
		// An image made by hand is used at the next call, back-off or not.
		if out, err := podman(t, "tag", testImage, image); err != nil {
			t.Fatalf("podman tag: %v: %s", err, out)
		}
		t.Cleanup(func() { _, _ = podman(t, "untag", testImage, image) })
		res := p.call("podman_shell", map[string]any{"command": []string{"echo", "made"}})
		if res.IsError || !strings.Contains(textOf(res), "made") {
			broken++
			t.Errorf("with the image tagged by hand, the next call: %q", textOf(res))
		}
		recordPromise(promiseFigure{Class: "a failing pull: calls in a row naming an image no registry has, then the image made by hand",
			Tried: calls + 1, Broken: broken,
			Measured: fmt.Sprintf("%d calls, 1 pull; %d answered at once with the pull's last error and when it is tried again; the next pull after the back-off (15 s), %d pulls in all; the image tagged by hand used at the next call",
				calls, backedOff, retried)})
	})
}

// memoryBomb allocates 1 GiB, touching every page.
const memoryBomb = "b = bytearray(1 << 30); print('survived')"

// tryOutOfMemory runs, under a 128 MiB limit, commands the memory limit
// kills (in the foreground, as a job, one of a command's processes) and
// commands killed by the model's own kill -9, and checks that each result
// says which it was. It returns how many were tried and broken.
func tryOutOfMemory(t *testing.T) (tried, broken int) {
	p := start(t, startOptions{image: pythonImage, args: []string{"--memory", "128m"}})
	const limit = "the workspace's memory limit of 128 MiB"
	check := func(what string, exit int, note string, wantExit int, wantNote string) {
		t.Helper()
		tried++
		if exit != wantExit || (wantNote == "") != (note == "") || !strings.Contains(note, wantNote) {
			broken++
			t.Errorf("%s: exit %d, out_of_memory %q; want exit %d and %q", what, exit, note, wantExit, wantNote)
		}
	}
	res := p.shell(map[string]any{"command": []string{"python3", "-c", memoryBomb}, "timeout_seconds": 120})
	check("a memory bomb in the foreground", res.ExitCode, res.OutOfMemory, 137, "killed by "+limit+" (out of memory)")
	if text := textOf(p.call("podman_shell", map[string]any{"command": []string{"python3", "-c", memoryBomb}, "timeout_seconds": 120})); !strings.Contains(text, "exit 137") || !strings.Contains(text, "killed by "+limit) {
		broken++
		t.Errorf("the text of an OOM-killed command: %q", text)
	}
	res = p.shell(map[string]any{"command": []string{"sh", "-c", "python3 -c \"" + memoryBomb + "\"; echo went on"}, "timeout_seconds": 120})
	check("a command one of whose processes the limit killed", res.ExitCode, res.OutOfMemory, 0, limit+" killed 1 process while it ran")
	res = p.shell(map[string]any{"command": []string{"sh", "-c", "kill -9 $$"}})
	check("a command that kills itself with -9", res.ExitCode, res.OutOfMemory, 137, "")

	job := func(argv ...string) string {
		started := p.shell(map[string]any{"command": argv, "background": true})
		return started.Job
	}
	status := func(id string) tools.JobView {
		var view tools.JobView
		waitUntil(t, 2*time.Minute, "job "+id+" to end", func() bool {
			var r tools.JobResult
			decodeStructured(t, p.call("job", map[string]any{"action": "status", "id": id}), &r)
			view = *r.Job
			return view.State == "exited"
		})
		return view
	}
	exitOf := func(v tools.JobView) int {
		if v.ExitCode == nil {
			return -1
		}
		return *v.ExitCode
	}
	bomb := status(job("python3", "-c", memoryBomb))
	check("a memory bomb as a job", exitOf(bomb), bomb.OutOfMemory, 137, "killed by "+limit+" (out of memory)")
	sleeper := job("sh", "-c", "echo $$ > sleeper.pid; exec sleep 600")
	waitUntil(t, time.Minute, "the job's pid file", func() bool { return p.run("test", "-s", "sleeper.pid").ExitCode == 0 })
	p.run("sh", "-c", "kill -9 $(cat sleeper.pid)")
	killed := status(sleeper)
	check("a job the model killed with kill -9", exitOf(killed), killed.OutOfMemory, 137, "")
	if text := textOf(p.call("job", map[string]any{"action": "list"})); strings.Count(text, "killed by "+limit) != 1 {
		broken++
		t.Errorf("the job list should name the one OOM-killed job:\n%s", text)
	}
	return tried, broken
}

// tryConnections adds a connection to this machine's service (the
// default) and one to the remote host, with `podman system connection
// add` in a containers.conf of the test (never the machine's own), and
// starts servers whose environment chooses between them, as podman does.
// It returns how many were tried and broken.
func tryConnections(t *testing.T) (tried, broken int) {
	r := needRemote(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "containers.conf")
	must(t, os.WriteFile(conf, nil, 0o644))
	config := []string{"CONTAINERS_CONF=" + conf, "XDG_CONFIG_HOME=" + dir, "PODMAN_CONNECTIONS_CONF=" + filepath.Join(dir, "podman-connections.json")}
	for _, args := range [][]string{{"--identity", r.key, "wink-remote", r.url}, {"--default", "wink-local", "unix://" + podmanSocket}} {
		add := exec.Command("podman", append([]string{"system", "connection", "add"}, args...)...)
		add.Env = append(os.Environ(), config...)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("podman system connection add %v: %v: %s", args, err, out)
		}
	}
	remoteArgs := []string{"--disk-limit", "0", "--warm", "0"}
	for _, tt := range []struct {
		name   string
		env    []string
		args   []string
		remote bool
		json   string // Podman 5's podman-connections.json, written for this server
	}{
		{name: "containers.conf's default"},
		{name: "CONTAINER_CONNECTION", env: []string{"CONTAINER_CONNECTION=wink-remote"}, args: remoteArgs, remote: true},
		{name: "--podman-connection over CONTAINER_CONNECTION", env: []string{"CONTAINER_CONNECTION=wink-local"},
			args: append([]string{"--podman-connection", "wink-remote"}, remoteArgs...), remote: true},
		{name: "CONTAINER_CONNECTION over CONTAINER_HOST", env: []string{"CONTAINER_HOST=unix://" + podmanSocket, "PODMAN_CONNECTION=wink-remote"},
			args: remoteArgs, remote: true},
		{name: "podman-connections.json's default over containers.conf's", json: `{"Connection":{"Default":"wink-remote"}}`, args: remoteArgs, remote: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tried++
			if tt.json != "" {
				file := filepath.Join(dir, "podman-connections.json")
				must(t, os.WriteFile(file, []byte(tt.json), 0o644))
				t.Cleanup(func() { os.Remove(file) })
			}
			opts := startOptions{serviceFromEnv: true, env: append(append([]string{}, config...), tt.env...), args: tt.args}
			if tt.remote {
				opts.remote = r
			}
			p := start(t, opts)
			if res := p.run("echo", "reached"); strings.TrimSpace(res.Stdout) != "reached" {
				broken++
				t.Fatalf("a command: %+v", res)
			}
			onRemote, onLocal := len(r.named(t, "container", p.prefix)) > 0, len(containersNamed(t, p.prefix)) > 0
			if onRemote != tt.remote || onLocal == tt.remote {
				broken++
				t.Errorf("the container is on the remote host %v, on this one %v; want remote %v", onRemote, onLocal, tt.remote)
			}
		})
	}
	t.Run("a name that does not exist", func(t *testing.T) {
		tried++
		cmd := exec.Command(winkBin, "--cache-dir", t.TempDir())
		cmd.Env = append(append(os.Environ(), config...), "CONTAINER_CONNECTION=wink-nope")
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), `"wink-nope": no such Podman connection`) ||
			!strings.Contains(string(out), "the known ones are wink-local, wink-remote") {
			broken++
			t.Errorf("exit %d (%v): %s; want 2 and the known connections", code, err, out)
		}
	})
	return tried, broken
}

// tryWorkspaceInfo asks workspace_info at each state of a workspace's life
// and checks what it says, and that asking never makes or starts a
// container. It returns how many states were tried and broken.
func tryWorkspaceInfo(t *testing.T) (tried, broken int) {
	p := start(t, startOptions{args: []string{"--lazy", "--egress", "example.invalid", "--egress-max-bytes", "8m", "--memory", "512m", "--disk-limit", "64m"}})
	info := func(what string, check func(r tools.WorkspaceInfoResult) string) tools.WorkspaceInfoResult {
		t.Helper()
		tried++
		var r tools.WorkspaceInfoResult
		p.tool("workspace_info", map[string]any{}, &r)
		if why := check(r); why != "" {
			broken++
			t.Errorf("%s: %s\n%s", what, why, r.Text())
		}
		return r
	}
	info("before the first call", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.State != "not made" || r.Container.Since != nil:
			return "the container is " + r.Container.State
		case len(containersNamed(t, p.prefix)) > 0:
			return "asking made a container"
		case r.Limits.MemoryBytes != 512<<20 || r.Limits.DiskBytes != 64<<20 || r.Limits.EgressMaxBytes != 8<<20 || !r.Limits.Egress || r.Limits.CommandTimeoutSeconds != 30:
			return fmt.Sprintf("limits %+v", r.Limits)
		}
		return ""
	})
	p.run("sh", "-c", "head -c 3000000 /dev/zero > blob")
	job := p.shell(map[string]any{"command": []string{"sleep", "600"}, "background": true}).Job
	var cp tools.WorkspaceCheckpointResult
	p.tool("workspace_checkpoint", map[string]any{"message": "first"}, &cp)
	var port tools.WorkspacePortResult
	p.tool("workspace_port", map[string]any{"action": "open", "port": 8000}, &port)
	name := p.container()
	info("with a job, a checkpoint and a port", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.Name != name || r.Container.State != "running" || r.Container.Since == nil || r.Container.Image != testImage:
			return fmt.Sprintf("container %+v, want %s running", r.Container, name)
		case r.Limits.DiskUsedBytes == nil || *r.Limits.DiskUsedBytes < 3000000 || *r.Limits.DiskUsedBytes > 64<<20:
			return fmt.Sprintf("disk used %v, want at least the 3 MB written", r.Limits.DiskUsedBytes)
		case len(r.RunningJobs) != 1 || r.RunningJobs[0].ID != job:
			return fmt.Sprintf("running jobs %+v, want %s", r.RunningJobs, job)
		case r.Checkpoints != 1 || r.LatestCheckpoint == nil || r.LatestCheckpoint.Message != "first":
			return fmt.Sprintf("checkpoints %d, latest %+v", r.Checkpoints, r.LatestCheckpoint)
		case len(r.Ports) != 1 || r.Ports[0].Port != 8000 || port.Port == nil || r.Ports[0].URL != port.Port.URL:
			return fmt.Sprintf("ports %+v", r.Ports)
		case r.Created.After(*r.Container.Since) || r.LastUsed.Before(*r.Container.Since):
			return fmt.Sprintf("created %s, since %s, last used %s", r.Created, r.Container.Since, r.LastUsed)
		}
		return ""
	})
	if out, err := podman(t, "rm", "-f", "-t", "0", name); err != nil {
		t.Fatalf("podman rm: %v: %s", err, out)
	}
	info("its container removed behind its back", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.State != "gone":
			return "the container is " + r.Container.State
		case len(containersNamed(t, p.prefix)) > 0:
			return "asking made the container again"
		case r.Checkpoints != 1:
			return fmt.Sprintf("%d checkpoints", r.Checkpoints)
		}
		return ""
	})
	p.shell(map[string]any{"action": "stop"})
	info("after podman_shell action=stop", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.State != "not made" || len(containersNamed(t, p.prefix)) > 0:
			return "the container is " + r.Container.State
		case len(r.RunningJobs) != 0:
			return fmt.Sprintf("running jobs %+v", r.RunningJobs)
		}
		return ""
	})
	return tried, broken
}

// tryHostileEnvironment runs servers whose environment holds what a
// user's shell may export for their own use, and checks that the programs
// the server runs here (mkfs, mount, git, podman unshare) do what they
// would without it. It returns how many sessions were tried and broken.
func tryHostileEnvironment(t *testing.T) (tried, broken int) {
	dir := t.TempDir()
	// A mke2fs.conf that gives a 64 MiB filesystem 32 inodes, and a git
	// configuration whose identity the environment would override.
	mke2fs := filepath.Join(dir, "mke2fs.conf")
	must(t, os.WriteFile(mke2fs, []byte("[fs_types]\n\text4 = {\n\t\tinode_ratio = 67108864\n\t}\n"), 0o644))
	gitconfig := filepath.Join(dir, "gitconfig")
	must(t, os.WriteFile(gitconfig, []byte("[user]\n\tname = The User\n\temail = user@example.com\n"), 0o644))
	hostile := []string{"CONTAINER_HOST=unix:///nonexistent/podman.sock", "CONTAINER_CONNECTION=nonexistent", "CONTAINERS_CONF=/nonexistent.conf",
		"MKE2FS_CONFIG=" + mke2fs, "LIBMOUNT_FSTAB=/nonexistent", "GIT_CONFIG_GLOBAL=" + gitconfig,
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Someone Else"}

	tried++
	p := start(t, startOptions{env: hostile, args: []string{"--disk-limit", "64m", "--git-identity"}})
	files := p.shell(map[string]any{"command": []string{"sh", "-c", "for i in $(seq 100); do echo $i > f$i || exit 1; done; echo $GIT_CONFIG_VALUE_0"}})
	if files.ExitCode != 0 || strings.TrimSpace(files.Stdout) != "The User" {
		broken++
		t.Errorf("100 files in a 64 MiB disk and the git identity: exit %d, stdout %q, stderr %q; want 0 and The User", files.ExitCode, files.Stdout, files.Stderr)
	}

	u := needRootless(t)
	tried++
	home := u.dir(t)
	folder := filepath.Join(home, "proj")
	for _, d := range []string{folder, filepath.Join(folder, "old")} {
		must(t, os.Mkdir(d, 0o755))
		must(t, os.Chown(d, u.uid, u.gid))
	}
	env := append(u.shellEnv(t), "CONTAINERS_CONF=/nonexistent.conf", "CONTAINERS_STORAGE_CONF=/nonexistent.conf", "PODMAN_CONNECTIONS_CONF=/nonexistent.json")
	r := start(t, startOptions{as: u, env: env, args: append([]string{"--allowed-root", home, "--mount", folder + ":proj:overlay"}, rootlessArgs...)})
	// Replacing a directory of the host folder leaves a whiteout of a
	// subordinate uid in the overlay's work directory.
	r.run("sh", "-c", "rm -rf proj/old && mkdir proj/old && echo x > proj/old/f")
	r.endSession()
	if left := u.notTheUsers(r.cache); len(left) > 0 {
		broken++
		t.Errorf("files of the container's users are left in the rootless cache: %v", left)
	}
	return tried, broken
}

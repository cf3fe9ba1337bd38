package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

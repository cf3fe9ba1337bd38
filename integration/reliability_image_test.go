package integration

import (
	"strings"
	"testing"
	"time"
)

// hostileChanges are what an image may declare to weaken the sandbox: a
// volume over /workspace and others, root, a broken PATH, a preload, its
// own entrypoint and working directory, and a stop signal that freezes.
var hostileChanges = []string{
	`VOLUME ["/data", "/workspace", "/tmp"]`, "USER root", "ENV PATH=/nonexistent",
	"ENV LD_PRELOAD=/nonexistent/evil.so", `ENTRYPOINT ["/bin/false"]`, "WORKDIR /nonexistent", "STOPSIGNAL SIGSTOP",
}

// TestReliabilityHostileImage runs sessions on images built to undo the
// sandbox, and checks the container is still the one asked for.
func TestReliabilityHostileImage(t *testing.T) {
	checks, failed := 0, 0
	check := func(ok bool, format string, args ...any) {
		t.Helper()
		checks++
		if !ok {
			failed++
			t.Errorf(format, args...)
		}
	}
	volumesBefore, _ := podman(t, "volume", "ls", "-q")

	t.Run("volumes, root, PATH, entrypoint", func(t *testing.T) {
		image := "localhost/wink-rel-hostile-" + randomHex(4) + ":latest"
		commitImage(t, image, "mkdir -p /data && echo from-the-image > /data/seed", hostileChanges...)
		t.Cleanup(func() { _, _ = podman(t, "rmi", "-f", image) })
		p := start(t, startOptions{image: image})
		p.tool("write_file", map[string]any{"file_path": "mine.txt", "content": "session file\n"}, &map[string]any{})
		out := p.run("/bin/sh", "-c", `id -u; id -g; grep CapEff /proc/self/status; pwd; cat mine.txt;
			for d in /workspace /data /tmp; do awk -v d=$d '$2 == d {print d, $3}' /proc/mounts; done`).Stdout
		t.Logf("in the container:\n%s", out)
		check(strings.HasPrefix(out, "65534\n65534\n"), "USER root in the image made the command run as %q; want 65534", out)
		check(strings.Contains(out, "CapEff:\t0000000000000000"), "capabilities with USER root: %q", out)
		check(strings.Contains(out, "\n/workspace\nsession file\n"), "the command did not start in the session's /workspace: %q", out)
		check(strings.Contains(out, "/data tmpfs\n") && strings.Contains(out, "/tmp tmpfs\n"), "the image's VOLUMEs did not become tmpfs: %q", out)
		check(!strings.Contains(out, "/workspace tmpfs"), "VOLUME /workspace hid the session's files: %q", out)
		msg := textOf(p.call("podman_shell", map[string]any{"command": []string{"echo", "ok"}}))
		check(strings.Contains(msg, "not found in PATH (/nonexistent)"), "with PATH=/nonexistent, echo said %q; want the PATH named", msg)
		name := p.container()
		p.endSession()
		gone := time.Now()
		for containerExists(t, name) && time.Since(gone) < 10*time.Second {
			time.Sleep(100 * time.Millisecond)
		}
		check(!containerExists(t, name), "with STOPSIGNAL SIGSTOP, %s was still there 10 s after its session ended", name)
	})
	t.Run("/etc/passwd is /dev/zero", func(t *testing.T) {
		image := "localhost/wink-rel-zero-" + randomHex(4) + ":latest"
		commitImage(t, image, "ln -sf /dev/zero /etc/passwd && ln -sf /dev/zero /etc/group")
		t.Cleanup(func() { _, _ = podman(t, "rmi", "-f", image) })
		p := start(t, startOptions{image: image})
		for range 2 { // the second call must not hang on what the first left
			begin := time.Now()
			res := p.call("podman_shell", map[string]any{"command": []string{"true"}})
			t.Logf("answered in %s: %.300s", time.Since(begin).Round(time.Millisecond), textOf(res))
			check(res.IsError && strings.Contains(textOf(res), "unable to find user 65534"),
				"on an image whose /etc/passwd is /dev/zero a call said %q; want runc's user error", textOf(res))
		}
		check(len(containersNamed(t, p.prefix)) == 0, "containers left after failed starts: %v", containersNamed(t, p.prefix))
	})
	volumesAfter, _ := podman(t, "volume", "ls", "-q")
	check(volumesAfter == volumesBefore, "volumes were created: before %q, after %q", volumesBefore, volumesAfter)
	t.Logf("hostile images: %d checks, %d failed", checks, failed)
	suite.record(func(f *figures) { f.HostileImage = &imageFigures{Checks: checks, Failed: failed} })
}

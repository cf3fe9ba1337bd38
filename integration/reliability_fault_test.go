package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inFlight starts a long command and returns what its call answers.
func inFlight(p *proc) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, err := p.client.CallTool(p.t.Context(), shellRequest("sleep", "30"))
		switch {
		case err != nil:
			out <- "protocol error: " + err.Error()
		case res.IsError:
			out <- textOf(res)
		default:
			out <- "finished: " + textOf(res)
		}
	}()
	time.Sleep(time.Second)
	return out
}

// survives writes a file, applies the fault while a command runs, then
// checks the next call works and the file is still there.
func survives(t *testing.T, p *proc, name string, fault func()) faultFigure {
	t.Helper()
	p.tool("write_file", map[string]any{"file_path": "kept.txt", "content": "written before the fault\n"}, &map[string]any{})
	answer := inFlight(p)
	fault()
	fig := faultFigure{Fault: name}
	select {
	case fig.InFlight = <-answer:
	case <-time.After(30 * time.Second):
		fig.InFlight = "no answer within 30 s"
		t.Errorf("%s: the call in flight hung", name)
	}
	begin := time.Now()
	res := p.call("read_file", map[string]any{"file_path": "kept.txt"})
	fig.RecoveryMs = time.Since(begin).Milliseconds()
	if res.IsError || !strings.Contains(textOf(res), "written before the fault") {
		fig.FilesLost = 1
		t.Errorf("%s: the file written before it: %.300s", name, textOf(res))
	}
	echo := p.call("podman_shell", map[string]any{"command": []string{"echo", "ok"}})
	fig.Survived = !echo.IsError && fig.FilesLost == 0
	if echo.IsError {
		t.Errorf("%s: the next call failed: %s", name, textOf(echo))
	}
	t.Logf("%s: in-flight call said %.160q; next call after %d ms; survived %v", name, fig.InFlight, fig.RecoveryMs, fig.Survived)
	return fig
}

func TestReliabilityFaults(t *testing.T) {
	record := func(f faultFigure) { suite.record(func(s *figures) { s.Faults = append(s.Faults, f) }) }

	t.Run("container killed", func(t *testing.T) {
		p := start(t, startOptions{})
		name := p.container()
		record(survives(t, p, "container killed mid-command (podman kill)", func() { mustPodman(t, "kill", name) }))
	})
	t.Run("agent killed", func(t *testing.T) {
		p := start(t, startOptions{})
		pid, _ := podman(t, "inspect", "--format", "{{.State.Pid}}", p.container())
		record(survives(t, p, "agent (the container's PID 1) killed with SIGKILL from the host", func() {
			if out, err := exec.Command("kill", "-9", pid).CombinedOutput(); err != nil {
				t.Fatalf("kill: %v %s", err, out)
			}
		}))
	})
	t.Run("podman service restarted", func(t *testing.T) {
		p := start(t, startOptions{})
		p.container()
		record(survives(t, p, "Podman service restarted mid-command", func() { restartService(t) }))
	})
	t.Run("podman service hung", func(t *testing.T) {
		p := start(t, startOptions{args: []string{"--podman-timeout", "5s"}})
		p.container()
		record(serviceHangs(t, p, servicePID(t)))
	})
	t.Run("image removed", func(t *testing.T) {
		image := "localhost/wink-rel-" + randomHex(4) + ":latest"
		uniqueImage(t, image)
		t.Cleanup(func() { _, _ = podman(t, "rmi", "-f", image) })
		p := start(t, startOptions{image: image})
		p.container()
		p.tool("write_file", map[string]any{"file_path": "kept.txt", "content": "written before the fault\n"}, &map[string]any{})
		mustPodman(t, "rmi", "-f", image) // removes the running container with it
		msg := textOf(p.call("podman_shell", map[string]any{"command": []string{"true"}}))
		if !strings.Contains(msg, image) {
			t.Errorf("with the image gone, a call said %q; want the image named", msg)
		}
		uniqueImage(t, image)
		fig := faultFigure{Fault: "image removed (and the container with it)", InFlight: msg}
		res := p.call("read_file", map[string]any{"file_path": "kept.txt"})
		fig.Survived = !res.IsError && strings.Contains(textOf(res), "written before")
		if !fig.Survived {
			fig.FilesLost = 1
			t.Errorf("after the image came back: %s", textOf(res))
		}
		record(fig)
	})
	t.Run("cache disk full", func(t *testing.T) {
		cache := smallDisk(t, 64<<20)
		// --lazy: the container is made by the call, on the full disk.
		p := start(t, startOptions{cache: cache, args: []string{"--disk-limit", "32m", "--lazy"}})
		filler := filepath.Join(cache, "filler")
		if out, err := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M", "count=48").CombinedOutput(); err != nil {
			t.Fatalf("filling the cache disk: %v %s", err, out)
		}
		msg := textOf(p.call("podman_shell", map[string]any{"command": []string{"true"}}))
		if !strings.Contains(msg, "less than one session's disk limit") {
			t.Errorf("on a full cache disk a call said %q", msg)
		}
		os.Remove(filler)
		res := p.call("podman_shell", map[string]any{"command": []string{"echo", "ok"}})
		fig := faultFigure{Fault: "cache disk full at session start", InFlight: msg, Survived: !res.IsError}
		if res.IsError {
			t.Errorf("after space was freed: %s", textOf(res))
		}
		record(fig)
	})
	t.Run("server killed with SIGKILL", func(t *testing.T) {
		cache := t.TempDir()
		live := start(t, startOptions{cache: cache})
		liveName := live.container()
		dead := start(t, startOptions{cache: cache})
		deadName := dead.container()
		_ = dead.cmd.Process.Kill()
		dead.waitExit(10 * time.Second)
		begin := time.Now()
		start(t, startOptions{cache: cache})
		orphans := 0
		for containerExists(t, deadName) && time.Since(begin) < 60*time.Second {
			time.Sleep(200 * time.Millisecond)
		}
		if containerExists(t, deadName) {
			orphans = 1
			t.Errorf("the killed server's container %s is still there after 60 s", deadName)
		}
		if !containerExists(t, liveName) {
			t.Errorf("the restart removed %s, a live server's container", liveName)
		}
		suite.record(func(f *figures) { f.Orphans = &orphans })
		record(faultFigure{Fault: "server killed with SIGKILL, then started again", Survived: orphans == 0 && containerExists(t, liveName),
			RecoveryMs: time.Since(begin).Milliseconds()})
	})
}

// uniqueImage commits a copy of the test image under name, with an ID of
// its own, so removing it removes an image and not only a tag.
func uniqueImage(t *testing.T, name string) {
	t.Helper()
	commitImage(t, name, "true")
}

// commitImage builds the image name from the test image: script runs in it
// as root, then the result is committed with the Dockerfile changes given.
func commitImage(t *testing.T, name, script string, changes ...string) {
	t.Helper()
	tmp := "wink-rel-src-" + randomHex(4)
	mustPodman(t, "run", "--name", tmp, testImage, "sh", "-c", script)
	defer podman(t, "rm", "-f", tmp)
	args := []string{"commit", "-q"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	mustPodman(t, append(args, tmp, name)...)
}

func mustPodman(t *testing.T, args ...string) {
	t.Helper()
	if out, err := podman(t, args...); err != nil {
		t.Fatalf("podman %v: %v %s", args, err, out)
	}
}

// serviceHangs stops the Podman service with SIGSTOP during a command: the
// call in flight must fail once the heartbeat gives the frozen channel up, a
// call while the service stays frozen must fail within the API deadline, and
// once the service resumes the session goes on with its files.
func serviceHangs(t *testing.T, p *proc, pid int) faultFigure {
	t.Helper()
	fig := faultFigure{Fault: "Podman service frozen (SIGSTOP) mid-command, resumed after the next call"}
	p.tool("write_file", map[string]any{"file_path": "kept.txt", "content": "written before the fault\n"}, &map[string]any{})
	answer := inFlight(p)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	stopped := time.Now()
	select {
	case fig.InFlight = <-answer:
	case <-time.After(40 * time.Second):
		t.Fatal("with the service frozen, the call in flight had no answer after 40 s")
	}
	t.Logf("the call in flight answered %s after the freeze: %.200q", time.Since(stopped).Round(time.Second), fig.InFlight)
	begin := time.Now()
	frozen := p.call("podman_shell", map[string]any{"command": []string{"echo", "ok"}})
	t.Logf("a call with the service still frozen answered after %s: %.300q", time.Since(begin).Round(time.Second), textOf(frozen))
	if !frozen.IsError || !strings.Contains(textOf(frozen), "Podman") {
		t.Errorf("with the service frozen, a call said %q; want an error naming the Podman service", textOf(frozen))
	}
	fig.InFlight += "; a call while it stayed frozen: " + textOf(frozen)
	resume()
	begin = time.Now()
	res := p.call("read_file", map[string]any{"file_path": "kept.txt"})
	fig.RecoveryMs = time.Since(begin).Milliseconds()
	if res.IsError || !strings.Contains(textOf(res), "written before the fault") {
		fig.FilesLost = 1
		t.Errorf("after the service resumed, the file written before: %.300s", textOf(res))
	}
	echo := p.call("podman_shell", map[string]any{"command": []string{"echo", "ok"}})
	if echo.IsError {
		t.Errorf("after the service resumed: %s", textOf(echo))
	}
	fig.Survived = !echo.IsError && fig.FilesLost == 0
	return fig
}

// servicePID finds the Podman service process (not a tini above it).
func servicePID(t *testing.T) int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "podman system service").Output()
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "podman" {
			return pid
		}
	}
	t.Fatal("no Podman service process (socket-activated services are not handled)")
	return 0
}

// restartService kills the Podman service and starts it again the way
// `make setup` does. Containers keep running: conmon does not depend on it.
func restartService(t *testing.T) {
	t.Helper()
	out, err := exec.Command("pgrep", "-f", "podman system service").Output()
	if err != nil {
		t.Fatalf("no Podman service process to restart (socket-activated services are not handled): %v", err)
	}
	for _, pid := range strings.Fields(string(out)) {
		_ = exec.Command("kill", pid).Run()
	}
	if out, err := exec.Command("bash", "../scripts/setup.sh").CombinedOutput(); err != nil {
		t.Fatalf("restarting the service: %v %s", err, out)
	}
}

// smallDisk mounts a filesystem of size bytes and returns its root.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir, img := t.TempDir(), filepath.Join(t.TempDir(), "cache.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"mkfs.ext4", "-q", "-F", "-m", "0", img}, {"mount", "-o", "loop", img, dir}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", c, err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

package integration

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// doctor runs `wink-mcp doctor` with args and returns its output and exit code.
func doctor(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(winkBin, append([]string{"doctor", "--cache-dir", t.TempDir()}, args...)...)
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running doctor: %v", err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// line returns the output line of the named check: a status in 5 columns,
// a space, then the check's name in 13.
func line(out, check string) string {
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 20 && strings.TrimSpace(l[6:19]) == check {
			return l
		}
	}
	return ""
}

func TestDoctorOnAReadyHost(t *testing.T) {
	prefix := "wd" + randomHex(4)
	out, code := doctor(t, "--image", testImage, "--name-prefix", prefix, "--podman-url", "unix://"+podmanSocket)
	if code != 0 {
		t.Fatalf("exit %d on a ready host:\n%s", code, out)
	}
	for _, check := range []string{"agent binary", "cache dir", "podman", "service", "runtime", "ulimits", "watch", "image", "container"} {
		if l := line(out, check); !strings.HasPrefix(l, "ok ") {
			t.Errorf("check %q: %q\n%s", check, l, out)
		}
	}
	if !strings.Contains(line(out, "container"), "uid 65534 with no capabilities and no network") {
		t.Errorf("container line: %s", line(out, "container"))
	}
	if !strings.Contains(line(out, "egress"), "rides a socket of each container's, mounted read-only at /run/wink-tunnel") {
		t.Errorf("egress line (the tunnel's path): %s", line(out, "egress"))
	}
	if left := containersNamed(t, prefix); len(left) != 0 {
		t.Errorf("doctor left containers behind: %v", left)
	}
}

func TestDoctorSaysWhatIsWrongAndHowToFixIt(t *testing.T) {
	out, code := doctor(t, "--image", testImage, "--podman-url", "unix:///nonexistent/podman.sock", "--nofile", "100000000")
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, out)
	}
	for check, want := range map[string]string{
		"service":   "FAIL",
		"ulimits":   "FAIL",
		"image":     "skip",
		"container": "skip",
	} {
		if l := line(out, check); !strings.HasPrefix(l, want) {
			t.Errorf("check %q: %q, want %s", check, l, want)
		}
	}
	if !strings.Contains(out, "fix: Start it: `sudo systemctl enable --now podman.socket`") || !strings.Contains(out, "fix: lower --nofile") {
		t.Errorf("fixes missing:\n%s", out)
	}
	if !strings.Contains(out, "not ready: 2 check(s) failed (service, ulimits)") {
		t.Errorf("verdict:\n%s", out)
	}

	out, code = doctor(t, "--image", "localhost/wink-no-such-image:1", "--podman-url", "unix://"+podmanSocket)
	if l := line(out, "image"); code != 1 || !strings.HasPrefix(l, "FAIL") || !strings.Contains(out, "fix: Run `make setup`") {
		t.Errorf("missing image: exit %d, %q\n%s", code, l, out)
	}
}

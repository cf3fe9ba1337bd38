package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testCDIDevice is the harmless device of the CDI spec `make setup`
// writes (scripts/setup.sh, write_test_cdi_spec): /dev/null as
// /dev/wink-test0, WINK_CDI_TEST=null0 and a read-only mount at
// /opt/wink-cdi. There is no GPU on these machines; a real one
// (nvidia.com/gpu=all) goes the same way.
const testCDIDevice = "wink-mcp.example/test=null0"

// TestCDIDevicesReachTheSession starts a server with --cdi-device: the
// session sees exactly what the spec gives (the device node, the
// variable, the mount, read-only) and keeps every other hardening
// setting; a device no spec names stops the server at start, naming it
// and the devices there are, and doctor says the same.
func TestCDIDevicesReachTheSession(t *testing.T) {
	if _, err := os.Stat("/etc/cdi/wink-mcp-test.yaml"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the test CDI spec is missing (make setup writes it): %v", err)
		}
		t.Skipf("the test CDI spec is missing; run make setup: %v", err)
	}
	p := start(t, startOptions{image: testImage, args: []string{"--cdi-device", testCDIDevice, "--warm", "0"}})
	out := p.run("sh", "-c", "ls -l /dev/wink-test0; echo env=$WINK_CDI_TEST; cat /opt/wink-cdi/README; "+
		"touch /opt/wink-cdi/x 2>&1; grep -E 'CapEff|NoNewPrivs' /proc/self/status; id -u; ls /sys/class/net")
	for _, want := range []string{"crw-rw-rw-", "1,   3", "/dev/wink-test0", "env=null0", "given by the wink-mcp test CDI spec",
		"Read-only file system", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "65534\nlo\n"} {
		if !strings.Contains(out.Stdout, want) {
			t.Errorf("the session's output lacks %q:\n%s\n%s", want, out.Stdout, out.Stderr)
		}
	}
	// Nothing but what the spec names: no other device node appears.
	if devs := p.run("sh", "-c", "ls /dev | sort | tr '\\n' ' '"); strings.Contains(devs.Stdout, "nvidia") || strings.Count(devs.Stdout, "wink") != 1 {
		t.Errorf("/dev holds %q", devs.Stdout)
	}

	// A profile's cdi_devices give its sessions the device; the server's
	// other sessions have none.
	file := filepath.Join(t.TempDir(), "profiles.yaml")
	if err := os.WriteFile(file, []byte("profiles:\n  device:\n    cdi_devices: ["+testCDIDevice+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := start(t, startOptions{transport: "http", image: testImage, args: []string{"--profiles", file, "--warm", "0"}})
	with := q.sibling(nil, "?profile=device")
	if out := with.run("sh", "-c", "ls /dev/wink-test0 && echo $WINK_CDI_TEST"); !strings.Contains(out.Stdout, "/dev/wink-test0\nnull0") {
		t.Errorf("a session of the profile: %q %q", out.Stdout, out.Stderr)
	}
	if out := q.run("sh", "-c", "ls /dev/wink-test0 2>&1; echo ${WINK_CDI_TEST:-unset}"); !strings.Contains(out.Stdout, "No such file") || !strings.Contains(out.Stdout, "unset") {
		t.Errorf("a session of no profile: %q; want no device", out.Stdout)
	}

	missing := "wink-mcp.example/test=nope"
	cmd := exec.Command(winkBin, "--cdi-device", missing, "--podman-url", "unix://"+podmanSocket, "--image", testImage)
	cmd.Stdin = strings.NewReader("")
	got, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(got), "CDI device "+missing+": no spec in /etc/cdi or /var/run/cdi defines it") ||
		!strings.Contains(string(got), testCDIDevice) {
		t.Errorf("a missing device: %v\n%s\nwant a refusal naming it and the devices there are", err, got)
	}
	doc, _ := exec.Command(winkBin, "doctor", "--cdi-device", missing, "--podman-url", "unix://"+podmanSocket, "--image", testImage).CombinedOutput()
	if !strings.Contains(string(doc), "wink-mcp-test.yaml ("+testCDIDevice+")") || !strings.Contains(string(doc), "no spec names --cdi-device "+missing) {
		t.Errorf("doctor:\n%s\nwant the specs and the missing device", doc)
	}
}

// Package integration drives the built wink-mcp binary with a real MCP
// client against the real Podman service. Without Podman these tests skip
// with a message; with CI set they fail instead, so a broken set-up never
// passes as green.
//
// Tests run one at a time: many count containers, processes or latencies
// across the whole host. The few that spend most of their time waiting
// (a command past two minutes, docs/toolchains.md's profile builds, an idle
// timeout, a pull that must fail), look only at their own servers'
// containers and keep no time tight enough for the others' load to break
// call t.Parallel, so that Go runs them together after all the others and
// their waits overlap (about two and a half minutes off a run; make test
// passes -parallel 8, as the default, GOMAXPROCS, would queue them two by
// two).
package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	// winkBin is the binary under test: $WINK_BIN, or built from the module.
	winkBin string
	// testImage is the small image most tests use.
	testImage = envOr("WINK_TEST_IMAGE", "localhost/wink-busybox:latest")
	// pythonImage is the image with python3 that `make setup` builds.
	pythonImage = envOr("WINK_PYTHON_IMAGE", "localhost/wink-workspace:bookworm")
	// podmanSocket is the service the servers under test use.
	podmanSocket = envOr("WINK_TEST_PODMAN_SOCKET", "/run/podman/podman.sock")
)

func TestMain(m *testing.M) {
	if reason := podmanMissing(); reason != "" {
		if os.Getenv("CI") != "" {
			fmt.Fprintf(os.Stderr, "integration: FAIL: CI is set and Podman is not usable: %s\n", reason)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "integration: SKIP: Podman is not usable (%s); run `make setup`\n", reason)
		os.Exit(0)
	}
	bin, cleanup, err := binary()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		os.Exit(1)
	}
	winkBin = bin
	code := m.Run()
	if err := writeFigures(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: writing the reliability figures: %v\n", err)
		code = 1
	}
	removeRootlessBinary()
	cleanup()
	os.Exit(code)
}

// podmanMissing says why Podman cannot be used, or "" when it can.
func podmanMissing() string {
	if _, err := exec.LookPath("podman"); err != nil {
		return "the podman command is not installed"
	}
	if err := ping(podmanSocket); err != nil {
		return fmt.Sprintf("the Podman service does not answer on %s: %v", podmanSocket, err)
	}
	for _, img := range []string{testImage, pythonImage} {
		if exec.Command("podman", "--url", "unix://"+podmanSocket, "image", "exists", img).Run() != nil {
			return fmt.Sprintf("the image %s is missing", img)
		}
	}
	return ""
}

// ping asks the Podman service on socket whether it answers.
func ping(socket string) error {
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}
	resp, err := httpc.Get("http://d/_ping")
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// binary returns $WINK_BIN, or builds wink-mcp with the Makefile's tags.
func binary() (string, func(), error) {
	if bin := os.Getenv("WINK_BIN"); bin != "" {
		return bin, func() {}, nil
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		return "", nil, err
	}
	m := regexp.MustCompile(`(?m)^TAGS := (.+)$`).FindSubmatch(makefile)
	if m == nil {
		return "", nil, fmt.Errorf("no TAGS line in the Makefile")
	}
	dir, err := os.MkdirTemp("", "wink-bin-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "wink-mcp")
	build := exec.Command("go", "build", "-tags", strings.TrimSpace(string(m[1])), "-o", bin, "../cmd/wink-mcp")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building wink-mcp: %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

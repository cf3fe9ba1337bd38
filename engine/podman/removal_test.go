//go:build containers_image_openpgp

package podman

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// realService returns an Engine on the Podman service `make setup` starts
// and the image to run, skipping without them (failing when CI is set,
// where a skip would hide a broken set-up), and always with -short.
func realService(t *testing.T) (*Engine, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Podman service; -short (make unit) leaves it out")
	}
	socket := envOr("WINK_TEST_PODMAN_SOCKET", "/run/podman/podman.sock")
	image := envOr("WINK_TEST_IMAGE", "localhost/wink-busybox:latest")
	missing := ""
	if _, err := exec.LookPath("podman"); err != nil {
		missing = "the podman command is not installed"
	} else if out, err := podmanCLI(socket, "image", "exists", image); err != nil {
		missing = fmt.Sprintf("the Podman service on %s has no image %s: %v %s", socket, image, err, out)
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and Podman is not usable: %s", missing)
		}
		t.Skipf("Podman is not usable (%s); run `make setup`", missing)
	}
	e := New(Options{URL: "unix://" + socket, APITimeout: time.Minute, PullTimeout: time.Minute},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	return e, image
}

func podmanCLI(socket string, args ...string) ([]byte, error) {
	return exec.Command("podman", append([]string{"--url", "unix://" + socket}, args...)...).CombinedOutput()
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// A container may be removed while an engine call asks about it: by a
// removal whose request gave up on its deadline while Podman went on, by
// another server's orphan sweep, by a user's `podman rm`. Podman 4.3
// answers an inspection that found the name but lost the container with
// 500 "no such container", not 404; the engine must still say "gone", and
// a second removal must succeed, never fail the caller's call.
func TestCallsRacingARemovalSeeTheContainerGone(t *testing.T) {
	e, image := realService(t)
	socket := envOr("WINK_TEST_PODMAN_SOCKET", "/run/podman/podman.sock")
	ctx := context.Background()
	for round := range 8 {
		name := fmt.Sprintf("wink-removal-race-%d-%d", os.Getpid(), round)
		if out, err := podmanCLI(socket, "run", "-d", "--name", name, image, "sleep", "600"); err != nil {
			t.Fatalf("podman run: %v %s", err, out)
		}
		var wg sync.WaitGroup
		begin := make(chan struct{})
		wg.Go(func() {
			<-begin
			if out, err := podmanCLI(socket, "rm", "-f", "-t", "0", name); err != nil {
				t.Errorf("podman rm: %v %s", err, out)
			}
		})
		wg.Go(func() {
			<-begin
			if err := e.Remove(ctx, name); err != nil {
				t.Errorf("round %d: Remove racing another removal: %v", round, err)
			}
		})
		for range 4 {
			wg.Go(func() {
				<-begin
				for {
					exists, _, err := e.Running(ctx, name)
					if err != nil {
						t.Errorf("round %d: Running during a removal: %v", round, err)
						return
					}
					if !exists {
						return
					}
				}
			})
		}
		close(begin)
		wg.Wait()
		if exists, _, err := e.Running(ctx, name); err != nil || exists {
			t.Fatalf("round %d: after the removals Running = %v, %v; want gone", round, exists, err)
		}
	}
}

//go:build containers_image_openpgp

package podman

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
)

func TestUnreachableServiceSaysWhatWasTriedAndTheFix(t *testing.T) {
	url := "unix://" + t.TempDir() + "/no-podman.sock"
	e := New(Options{URL: url, CacheDir: t.TempDir(), APITimeout: time.Second}, slog.New(slog.DiscardHandler))
	_, err := e.Describe(context.Background())
	if !errors.Is(err, engine.ErrUnreachable) {
		t.Fatalf("err = %v; want engine.ErrUnreachable", err)
	}
	for _, want := range []string{"cannot reach the Podman service (tried " + url, ". " + e.ServiceFix(), "systemctl enable --now podman.socket", "podman system service"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// Service says, without connecting, where the service is and whether it
// is off this host's Unix sockets: doctor words its checks by it.
func TestServiceIsTheConfiguredURLAndWhetherItIsRemote(t *testing.T) {
	for url, remote := range map[string]bool{
		"":                               false, // the local sockets
		"unix:///run/podman/podman.sock": false,
		"ssh://core@builder/run/podman/podman.sock": true,
		"tcp://h:8443": true,
	} {
		got := New(Options{URL: url}, slog.New(slog.DiscardHandler)).Service()
		if got != (engine.Service{Address: url, Remote: remote}) {
			t.Errorf("Service() of %q = %+v, want remote %v", url, got, remote)
		}
	}
}

func TestWithinExplainsOnlyItsOwnDeadline(t *testing.T) {
	t.Run("the deadline passed", func(t *testing.T) {
		c, end := within(context.Background(), context.Background(), time.Millisecond)
		<-c.Done()
		err := fmt.Errorf("inspecting container x: %w", c.Err())
		end(&err)
		if !errors.Is(err, engine.ErrSlow) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v; want engine.ErrSlow, no longer a bare deadline", err)
		}
		for _, want := range []string{"the Podman service did not answer within 1ms", "inspecting container x", "--podman-timeout", "wink-mcp doctor"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	})
	t.Run("the caller cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c, end := within(ctx, context.Background(), time.Hour)
		cancel()
		<-c.Done()
		want := fmt.Errorf("listing containers: %w", c.Err())
		err := want
		end(&err)
		if err != want {
			t.Fatalf("err = %v; a cancelled caller's error must stay as it was", err)
		}
	})
	t.Run("no error", func(t *testing.T) {
		c, end := within(context.Background(), context.Background(), time.Millisecond)
		<-c.Done()
		var err error
		end(&err)
		if err != nil {
			t.Fatalf("err = %v; want nil", err)
		}
	})
}

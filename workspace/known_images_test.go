package workspace

import (
	"strings"
	"testing"
	"time"
)

// withoutEngine runs f while the fake engine cannot answer (its lock is
// held), failing the test if f waits for it.
func withoutEngine(t *testing.T, eng *fakeEngine, f func()) {
	t.Helper()
	done := make(chan struct{})
	eng.mu.Lock()
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		eng.mu.Unlock()
	case <-time.After(30 * time.Second): // a hang, not a speed: f asked the engine
		eng.mu.Unlock()
		<-done
		t.Fatal("KnownSessionImage waited for the engine")
	}
}

// TestKnownSessionImageNeverAsksTheEngine checks what an initialize is
// told of a session's image with an engine that does not answer: the
// configuration before anything is found (the server's choices in order,
// the profile's base and its setup), then what this process found: the
// server's choice, the profile's built image, a container's image.
func TestKnownSessionImageNeverAsksTheEngine(t *testing.T) {
	m, eng := newProfileManager(t, func(c *Config) { c.Image = "" })
	eng.mu.Lock()
	eng.images[LocalImage] = true
	eng.mu.Unlock()
	m.Register("b", SessionOptions{Profile: "built"})
	var plain, built PlannedImage
	withoutEngine(t, eng, func() { plain, built = m.images.KnownSessionImage("plain"), m.images.KnownSessionImage("b") })
	if plain.Image != LocalImage || plain.Profile != "" || !strings.Contains(plain.Pending, "if the Podman service has it; else `"+DefaultImage+"`") {
		t.Errorf("no profile, nothing found yet: %+v; want the server's choices in order", plain)
	}
	if built.Image != "test-image" || built.Profile != "built" || built.Pending != "profile `built`'s setup builds the workspace's image from it" {
		t.Errorf("a profile not yet built: %+v; want its base, which its setup builds from", built)
	}

	if err := m.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	res := useBuilt(t, m, "a")
	m.Register("c", SessionOptions{Profile: "built"})
	var chosen, later, running PlannedImage
	withoutEngine(t, eng, func() {
		chosen, later, running = m.images.KnownSessionImage("plain"), m.images.KnownSessionImage("c"), m.images.KnownSessionImage("a")
	})
	if chosen.Image != LocalImage || chosen.Pending != "" {
		t.Errorf("no profile, after the server chose: %+v; want %s", chosen, LocalImage)
	}
	for what, got := range map[string]PlannedImage{"a new session of the built profile": later, "the session running it": running} {
		if got.Image != res.Image || got.Profile != "built" || got.Pending != "" {
			t.Errorf("%s: %+v; want %s", what, got, res.Image)
		}
	}
}

// TestKnownSessionImageFollowsAProfileChange: once a session's container
// goes for another profile's, its image is that profile's, not the old
// container's.
func TestKnownSessionImageFollowsAProfileChange(t *testing.T) {
	m, _ := newProfileManager(t, nil)
	s, _ := m.Session("a")
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.images.KnownSessionImage("a"); got.Image != "test-image" || got.Profile != "" {
		t.Fatalf("before the change: %+v", got)
	}
	res, err := s.profileSwitch.UseProfile(ctx, "built", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.images.KnownSessionImage("a"); got.Image != res.Image || got.Profile != "built" {
		t.Errorf("after the change: %+v; want %s", got, res.Image)
	}
}

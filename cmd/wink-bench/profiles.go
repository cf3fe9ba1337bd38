package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// profileBuildSamples is how many first calls wait for a profile's build:
// each makes an image.
const profileBuildSamples = 10

// measureProfiles times the first call of a new stdio process started
// with --profile, as a desktop user's is: from the profile's image when it
// is built (the usual case: once per change to the profile), and, the
// baseline, when the first session must wait for the profile's setup to
// run and be committed. The profile sets up a one-line change on the
// workspace image, so the baseline is the cost of a build itself, not of
// what a real setup downloads.
func measureProfiles(ctx context.Context, cfg config) (cached, uncached measurement) {
	cachedName := "first call of a new stdio process with a profile, its image built"
	uncachedName := "baseline: the same, the profile's setup not yet run (a one-line setup)"
	dir, err := os.MkdirTemp("", "wink-bench-profiles-")
	if err != nil {
		return failed(cachedName, err), failed(uncachedName, err)
	}
	defer os.RemoveAll(dir)
	defer removeBenchProfileImages(cfg)
	file := filepath.Join(dir, "profiles.yaml")
	writeProfile := func() error {
		var nonce [6]byte
		_, _ = rand.Read(nonce[:])
		text := fmt.Sprintf("profiles:\n  bench:\n    image: %s\n    setup: [\"echo %s > /etc/bench-profile\"]\n", cfg.image, hex.EncodeToString(nonce[:]))
		return os.WriteFile(file, []byte(text), 0o644)
	}
	var s *session
	call := func(int) error {
		return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"cat", "/etc/bench-profile"}})
	}
	closeIt := func() { s.close() }
	startIt := func() (err error) {
		s, err = startSessionIn(ctx, cfg, dir, "--profiles", file, "--profile", "bench")
		return err
	}
	uncached = measureSetup(uncachedName, profileBuildSamples, func() error {
		if err := writeProfile(); err != nil {
			return err
		}
		return startIt()
	}, call, closeIt)
	if err := writeProfile(); err != nil {
		return failed(cachedName, err), uncached
	}
	build := append([]string{"profiles", "build"}, serverArgs(cfg, dir)...)
	if out, err := exec.Command(cfg.bin, append(build, "--profiles", file)...).CombinedOutput(); err != nil {
		return failed(cachedName, fmt.Errorf("building the profile: %v: %s", err, out)), uncached
	}
	cached = measureSetup(cachedName, cfg.coldSamples, startIt, call, closeIt)
	return cached, uncached
}

// removeBenchProfileImages removes the images the measurement built.
func removeBenchProfileImages(cfg config) {
	podman := func(args ...string) string {
		out, _ := exec.Command("podman", append([]string{"--url", "unix://" + cfg.socket}, args...)...).Output()
		return string(out)
	}
	for _, id := range strings.Fields(podman("images", "--filter", "label=io.wink-mcp.profile=bench", "--format", "{{.ID}}")) {
		podman("rmi", "-f", id)
	}
}

package main

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// The machine is asked once for a registry the environment does not
// name; later starts read the answer from the cache directory until it
// is a day old; an empty answer is asked again; the environment wins.
func TestMachineRegistriesAreCached(t *testing.T) {
	dir := t.TempDir()
	var asked atomic.Int32
	ask := func(name string) string {
		asked.Add(1)
		if name == "WINK_APT_MIRROR_HOST" {
			return "" // not configured on this machine
		}
		return "https://" + name + ".example"
	}
	noEnv := func(string) (string, bool) { return "", false }
	got := cachedMachineRegistries(noEnv, dir, ask)
	if got("WINK_NPM_REGISTRY") != "https://WINK_NPM_REGISTRY.example" || asked.Load() != 3 {
		t.Fatalf("first start: %q after %d questions", got("WINK_NPM_REGISTRY"), asked.Load())
	}
	got = cachedMachineRegistries(noEnv, dir, ask)
	if got("WINK_GO_PROXY") != "https://WINK_GO_PROXY.example" || asked.Load() != 4 {
		t.Errorf("second start: %q after %d questions, want 4 (only the empty answer asked again)", got("WINK_GO_PROXY"), asked.Load())
	}
	env := func(name string) (string, bool) { return "https://env.example", name == "WINK_NPM_REGISTRY" }
	cachedMachineRegistries(env, dir, ask)
	if asked.Load() != 5 {
		t.Errorf("with the environment naming npm's: %d questions, want 5", asked.Load())
	}
	// A day later, each is asked again.
	old := time.Now().Add(-registriesTTL - time.Minute)
	writeRegistries(filepath.Join(dir, registriesFile), map[string]registryAnswer{
		"WINK_GO_PROXY": {Value: "https://stale.example", Read: old}, "WINK_NPM_REGISTRY": {Value: "https://stale.example", Read: old}})
	if got := cachedMachineRegistries(noEnv, dir, ask); got("WINK_GO_PROXY") != "https://WINK_GO_PROXY.example" || asked.Load() != 8 {
		t.Errorf("a day later: %q after %d questions, want 8", got("WINK_GO_PROXY"), asked.Load())
	}
	// A damaged file is asked again, not trusted.
	if err := os.WriteFile(filepath.Join(dir, registriesFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := cachedMachineRegistries(noEnv, dir, ask); got("WINK_GO_PROXY") == "" || asked.Load() != 11 {
		t.Errorf("a damaged cache: %q after %d questions, want 11", got("WINK_GO_PROXY"), asked.Load())
	}
}

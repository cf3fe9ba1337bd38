package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/hostcmd"
)

// machineRegistryNames are the built-in profiles' registry variables that
// this machine's own configuration can answer (machineRegistry).
var machineRegistryNames = []string{"WINK_GO_PROXY", "WINK_NPM_REGISTRY", "WINK_APT_MIRROR_HOST"}

// registriesFile, in the cache directory, keeps what this machine's
// configuration answered for each registry, and when, for registriesTTL:
// asking npm takes about half a second, too long for every start of a
// stdio server, whose first call must be instant.
const (
	registriesFile = "machine-registries.json"
	registriesTTL  = 24 * time.Hour
)

// registryAnswer is one cached answer of machineRegistry.
type registryAnswer struct {
	Value string    `json:"value"`
	Read  time.Time `json:"read"`
}

// cachedMachineRegistries returns the machine's registries the server's
// environment (lookup) does not name: each from the cache directory's
// registriesFile while it is younger than registriesTTL, the others read
// at once (ask, concurrently: machineRegistry) and written back. An
// answer that names nothing is not kept, so a registry configured later
// is found at the next start.
func cachedMachineRegistries(lookup func(string) (string, bool), cacheDir string, ask func(name string) string) func(string) string {
	path := filepath.Join(cacheDir, registriesFile)
	cached := map[string]registryAnswer{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &cached) // a damaged file is read again from the machine
	}
	now := time.Now()
	answers := map[string]string{}
	var missing []string
	for _, name := range machineRegistryNames {
		if v, ok := lookup(name); ok && v != "" {
			continue
		}
		if a, ok := cached[name]; ok && a.Value != "" && now.Sub(a.Read) >= 0 && now.Sub(a.Read) < registriesTTL {
			answers[name] = a.Value
			continue
		}
		missing = append(missing, name)
	}
	if len(missing) > 0 {
		found := make([]string, len(missing))
		var wg sync.WaitGroup
		for i, name := range missing {
			wg.Go(func() { found[i] = ask(name) })
		}
		wg.Wait()
		for i, name := range missing {
			if found[i] != "" {
				answers[name] = found[i]
				cached[name] = registryAnswer{Value: found[i], Read: now}
			}
		}
		writeRegistries(path, cached)
	}
	return func(name string) string { return answers[name] }
}

// writeRegistries writes the cached answers atomically; a cache directory
// that cannot take them only means asking the machine again next time.
func writeRegistries(path string, cached map[string]registryAnswer) {
	b, err := json.Marshal(cached)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".registries-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
	}
}

// machineRegistry reads a registry from this machine's configuration:
// the first https entry of GOPROXY (the environment's, else `go env`'s),
// npm's configured registry, and the host of the first Debian source in
// apt's configuration. "" when there is none.
func machineRegistry(name string) string {
	switch name {
	case "WINK_GO_PROXY":
		list := os.Getenv("GOPROXY")
		if list == "" {
			list = commandOutput("go", "env", "GOPROXY")
		}
		for _, entry := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == '|' }) {
			if strings.HasPrefix(entry, "https://") {
				return entry
			}
		}
	case "WINK_NPM_REGISTRY":
		if v := os.Getenv("npm_config_registry"); v != "" {
			return v
		}
		if v := commandOutput("npm", "config", "get", "registry"); strings.HasPrefix(v, "https://") {
			return v
		}
	case "WINK_APT_MIRROR_HOST":
		return aptMirrorHost()
	}
	return ""
}

// configEnv are the variables go and npm read their users' configuration
// through, passed to them (hostcmd keeps the rest of the server's
// environment from the tools it runs).
var configEnv = []string{"HOME", "XDG_CONFIG_HOME", "GOENV", "GOROOT", "GOPATH", "NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG", "NPM_CONFIG_PREFIX"}

// commandOutput runs a command briefly and returns its output trimmed,
// "" when it is missing or fails.
func commandOutput(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := hostcmd.Command(ctx, name, configEnv, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

var aptSource = regexp.MustCompile(`^(?:deb\s+(?:\[[^]]*\]\s+)?|URIs:\s*)https?://([^/\s:]+)[^\s]*debian`)

// aptMirrorHost is the host of the first Debian archive in apt's
// sources: the mirror `make setup` builds the workspace image from.
func aptMirrorHost() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	for _, name := range append([]string{"/etc/apt/sources.list"}, files...) {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := aptSource.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
				f.Close()
				return m[1]
			}
		}
		f.Close()
	}
	return ""
}

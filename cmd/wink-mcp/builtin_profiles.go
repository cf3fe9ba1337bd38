package main

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/profiles/detect"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// Values of --detect.
const (
	detectAsk  = "ask"
	detectAuto = "auto"
	detectOff  = "off"
)

// builtinProfiles returns the built-in profiles, their registries read
// from lookup (the server's environment) and else from this machine's
// own configuration; those left out are logged with the reason.
func builtinProfiles(lookup func(string) (string, bool)) (*profiles.File, []profiles.Unavailable) {
	return profiles.Builtin(registryLookup(lookup, machineRegistries(lookup)))
}

// machineRegistries reads, at once, the machine's registries the
// server's environment does not name (npm takes about half a second to
// answer), and returns them by variable.
func machineRegistries(lookup func(string) (string, bool)) func(string) string {
	names := []string{"WINK_GO_PROXY", "WINK_NPM_REGISTRY", "WINK_APT_MIRROR_HOST"}
	found := make([]string, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		if v, ok := lookup(name); ok && v != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i] = machineRegistry(name)
		}()
	}
	wg.Wait()
	return func(name string) string {
		if i := slices.Index(names, name); i >= 0 {
			return found[i]
		}
		return ""
	}
}

// registryLookup gives the built-in profiles' variables: each is the
// server's environment variable of that name when set; else the URL
// variables come from machine (the Go toolchain's GOPROXY, npm's
// registry, apt's sources), and each _HOST is its URL's host.
func registryLookup(lookup func(string) (string, bool), machine func(string) string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := lookup(name); ok && v != "" {
			return strings.TrimSuffix(v, "/"), true
		}
		if base, ok := strings.CutSuffix(name, "_HOST"); ok && base != "WINK_APT_MIRROR" {
			u, ok := registryLookup(lookup, machine)(base)
			if !ok {
				return "", false
			}
			parsed, err := url.Parse(u)
			if err != nil || parsed.Hostname() == "" {
				return "", false
			}
			return parsed.Hostname(), true
		}
		v := machine(name)
		return strings.TrimSuffix(v, "/"), v != ""
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

// commandOutput runs a command briefly and returns its output trimmed,
// "" when it is missing or fails.
func commandOutput(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
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

// detectProfile looks at the host folders for the toolchain they need
// (--detect), records what it found for the prompt and workspace_profile,
// and with auto makes it the sessions' profile. An explicit --profile
// wins: nothing is looked at. The first folder with a finding decides.
func detectProfile(w *workspace.Config, mode string) error {
	switch mode {
	case detectOff:
		return nil
	case detectAsk, detectAuto:
	default:
		return fmt.Errorf("--detect %q: want ask (say what the folders need), auto (start in it) or off", mode)
	}
	if w.Profile != "" || w.Profiles == nil {
		return nil
	}
	for _, m := range w.Mounts {
		f, err := detect.Detect(m.HostPath)
		if err != nil {
			continue // a folder that cannot be read: the mount says why when the server checks it
		}
		where := m.Path
		if where == "" {
			where = filepath.Base(filepath.Clean(m.HostPath))
		}
		d := &workspace.Detection{Folder: workspace.Root + "/" + where, Finding: f}
		if w.Detection == nil || !w.Detection.Finding.Found() {
			w.Detection = d
		}
		if !f.Found() {
			continue
		}
		if _, err := w.Profiles.Get(f.Profile); err != nil {
			d.Finding.Reason += fmt.Sprintf("; but no %s profile is offered here", f.Profile)
			d.Finding.Profile = ""
			continue
		}
		d.Started = mode == detectAuto
		if d.Started {
			w.Profile = f.Profile
		}
		return nil
	}
	return nil
}

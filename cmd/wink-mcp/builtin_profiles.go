package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/profiles/detect"
	"github.com/wink-mcp/wink-mcp/profiles/devcontainer"
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
// own configuration (cached in cacheDir: cachedMachineRegistries); those
// left out are logged with the reason.
func builtinProfiles(lookup func(string) (string, bool), cacheDir string) (*profiles.File, []profiles.Unavailable) {
	return profiles.Builtin(registryLookup(lookup, cachedMachineRegistries(lookup, cacheDir, machineRegistry)))
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

// detectProfile looks at the host folders for the toolchain they need
// (--detect), records what it found for the prompt and workspace_profile,
// and with auto makes it the sessions' profile. An explicit --profile
// wins: nothing is looked at. What a project says about its own
// container comes first, as the issue orders it: the first folder's
// devcontainer.json or Dockerfile (detectContainer), then each folder's
// language markers; the first folder with a finding decides.
func detectProfile(w *workspace.Config, mode string) error {
	if err := checkDetectMode(mode); err != nil || mode == detectOff {
		return err
	}
	if w.Profile != "" || w.Profiles == nil {
		return nil
	}
	if len(w.Mounts) > 0 && detectContainer(w, mode) {
		return nil
	}
	for _, m := range w.Mounts {
		f, err := detect.Detect(m.HostPath)
		if err != nil {
			continue // a folder that cannot be read: the mount says why when the server checks it
		}
		d := &workspace.Detection{Folder: mountedAt(m), Finding: f}
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

// checkDetectMode refuses a --detect that is not ask, auto or off.
func checkDetectMode(mode string) error {
	switch mode {
	case detectOff, detectAsk, detectAuto:
		return nil
	}
	return fmt.Errorf("--detect %q: want ask (say what the folders need), auto (start in it) or off", mode)
}

// detectContainer looks in the first host folder for a devcontainer.json
// or a Dockerfile (as --project-image reads them) and, when there is
// one, offers it as the "project" profile and records the finding; with
// auto, sessions start in it. A description the sandbox refuses (a
// privileged devcontainer.json, say) is logged and passed over: the
// language markers decide then.
func detectContainer(w *workspace.Config, mode string) bool {
	m := w.Mounts[0]
	found, err := devcontainer.Read(m.HostPath)
	if err == nil && found != nil {
		err = addProjectProfile(w, m.HostPath, found)
	}
	switch {
	case err != nil:
		slog.Warn("the first --mount folder's own container is not offered; its language markers are looked at instead", "folder", m.HostPath, "err", err)
		return false
	case found == nil:
		return false
	}
	d := &workspace.Detection{Folder: mountedAt(m), Finding: detect.Finding{Profile: devcontainer.ProfileName, Marker: found.File,
		Reason: fmt.Sprintf("%s describes the project's own container (%s)", found.File, found.Why)}, Started: mode == detectAuto}
	w.Detection = d
	if d.Started {
		w.Profile = devcontainer.ProfileName
	}
	slog.Info("the first --mount folder describes its own container", "profile", devcontainer.ProfileName, "summary", found.Summary(), "started", d.Started)
	return true
}

// mountedAt is where a host folder shows in the workspace.
func mountedAt(m workspace.Mount) string {
	where := m.Path
	if where == "" {
		where = filepath.Base(filepath.Clean(m.HostPath))
	}
	return workspace.Root + "/" + where
}

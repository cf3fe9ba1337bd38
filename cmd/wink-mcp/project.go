package main

import (
	"fmt"
	"slices"

	"github.com/wink-mcp/wink-mcp/hostcdi"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/profiles/devcontainer"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// resolveProject reads, for --project-image, what the first --mount
// folder says about its container and makes it the "project" profile,
// the sessions' default, beside the profiles file's.
func resolveProject(w *workspace.Config, opts *serveOptions) error {
	if !opts.projectImage {
		return nil
	}
	if len(w.Mounts) == 0 {
		return fmt.Errorf("--project-image reads the first --mount folder's devcontainer.json or Dockerfile; pass --mount with it")
	}
	dir := w.Mounts[0].HostPath
	found, err := devcontainer.Read(dir)
	if err != nil {
		return fmt.Errorf("--project-image: %w", err)
	}
	if found == nil {
		return fmt.Errorf("--project-image: %s has no .devcontainer/devcontainer.json, .devcontainer.json, Dockerfile or Containerfile", dir)
	}
	opts.project = found
	if err := addProjectProfile(w, dir, found); err != nil {
		return fmt.Errorf("--project-image: %w", err)
	}
	w.Profile = devcontainer.ProfileName
	return nil
}

// addProjectProfile makes what the host folder dir says about its
// container (found) the "project" profile, beside the others.
func addProjectProfile(w *workspace.Config, dir string, found *devcontainer.Found) error {
	p := found.Profile(dir, w.Egress)
	if w.Profiles == nil {
		w.Profiles = &profiles.File{ID: p.FileID, Profiles: map[string]*profiles.Profile{}}
	}
	if _, taken := w.Profiles.Profiles[p.Name]; taken {
		return fmt.Errorf("the profiles file %s already has a profile called %q; rename it", w.Profiles.Path, p.Name)
	}
	w.Profiles.Profiles[p.Name] = p
	return nil
}

// resolveCDIDevices checks each --cdi-device is a CDI device's name;
// the workspace finds it in this machine's specs when it starts, and
// doctor says which specs there are. Kubernetes refuses the flag
// (resolveEngine).
func resolveCDIDevices(w *workspace.Config, names []string) error {
	for _, name := range names {
		if err := hostcdi.CheckName(name); err != nil {
			return fmt.Errorf("--cdi-device: %w", err)
		}
	}
	w.CDIDevices = slices.Clone(names)
	return nil
}

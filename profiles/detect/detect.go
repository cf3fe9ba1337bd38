// Package detect reads what a project folder says about the toolchain it
// needs and names the built-in profile that fits: one entry point,
// Detect, which returns what it found and why.
//
// The rules are tried in order and the first that matches decides; the
// others that match are reported beside it. Steps that read a project's
// own container description (a devcontainer.json, a Dockerfile) belong in
// front of the language markers, so that what a project says about its
// container wins over what its files suggest.
package detect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Finding is what Detect found in a folder.
type Finding struct {
	// Profile is the built-in profile that fits ("" when nothing did).
	Profile string
	// Marker is the file that decided, relative to the folder.
	Marker string
	// Reason says in one sentence what was found and why it decided.
	Reason string
	// Others are the other markers found, which did not decide.
	Others []string
}

// Found reports whether a profile was found.
func (f Finding) Found() bool { return f.Profile != "" }

// marker is one language marker: a file at the top of the project and
// the built-in profile it asks for.
type marker struct {
	file, profile, says string
}

// markers are tried in this order: a project with go.mod and a
// package.json (a Go service with a front end's tooling) is first a Go
// project; Cargo.toml before package.json alike. Python's markers come
// last, since a requirements.txt is often a helper beside another build.
var markers = []marker{
	{"go.mod", "go", "a Go module"},
	{"Cargo.toml", "rust", "a Rust crate or workspace"},
	{"package.json", "node", "a Node.js package"},
	{"pyproject.toml", "python", "a Python project"},
	{"requirements.txt", "python", "Python requirements"},
}

// Detect looks at the top of the folder dir (not below it: a marker deep
// in a tree says little about the project) for the language markers, in
// order. A folder with none gives a Finding without a Profile whose Reason
// says so; only a folder that cannot be read is an error. Markers must be
// regular files: a link or a folder of that name is not followed, so
// that a link cannot make Detect read outside the folder.
func Detect(dir string) (Finding, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return Finding{}, fmt.Errorf("detecting the toolchain of %s: %w", dir, err)
	}
	if !info.IsDir() {
		return Finding{}, fmt.Errorf("detecting the toolchain of %s: not a folder", dir)
	}
	var f Finding
	for _, m := range markers {
		ok, err := regularFile(filepath.Join(dir, m.file))
		if err != nil {
			return Finding{}, fmt.Errorf("detecting the toolchain of %s: %w", dir, err)
		}
		if !ok {
			continue
		}
		if f.Profile == "" {
			f.Profile, f.Marker = m.profile, m.file
			f.Reason = fmt.Sprintf("%s is %s, so the %s profile", m.file, m.says, m.profile)
			continue
		}
		f.Others = append(f.Others, m.file)
	}
	switch {
	case f.Profile == "":
		names := make([]string, len(markers))
		for i, m := range markers {
			names[i] = m.file
		}
		f.Reason = "none of " + strings.Join(names, ", ") + " is at the top of the folder"
	case len(f.Others) > 0:
		f.Reason += fmt.Sprintf(" (also found: %s, which come after %s in the order)", strings.Join(f.Others, ", "), f.Marker)
	}
	return f, nil
}

// regularFile reports whether name is a regular file, not following a
// link; a name that does not exist is not an error.
func regularFile(name string) (bool, error) {
	info, err := os.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return info.Mode().IsRegular(), nil
}

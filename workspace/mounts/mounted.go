package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/changes"
)

// Info describes one host folder in a session's workspace.
type Info struct {
	// HostPath is the folder on the host.
	HostPath string `json:"host_path"`
	// Path is where it appears, relative to /workspace.
	Path string `json:"path"`
	// Mode is overlay, ro or copy.
	Mode Mode `json:"mode"`
	// Dir is its directory under the session directory, "mounts/<n>".
	Dir string `json:"dir"`
	// FromRoot is true for a folder the MCP client declared as a root.
	FromRoot bool `json:"from_root,omitempty"`
	// Overlay names the driver of an overlay mount ("" is the kernel's).
	Overlay changes.Markers `json:"overlay,omitempty"`
	// ExportIgnored puts in patches the new files the folder's .gitignore
	// rules ignore (the server's --export-ignored).
	ExportIgnored bool `json:"export_ignored,omitempty"`
}

// Mounted is a mount as one session has it.
type Mounted struct {
	Resolved
	Dir      string // absolute: <session>/mounts/<n>
	FromRoot bool
	Markers  changes.Markers // the overlay driver, for overlay mounts
	Ignored  bool            // patches include new files the folder ignores
	Uploaded bool            // a copy's files are in the Podman host's volume (Config.FilesOnEngineHost)
}

// Info describes the mount, its directory relative to sessionDir.
func (m Mounted) Info(sessionDir string) Info {
	rel, _ := filepath.Rel(sessionDir, m.Dir)
	return Info{HostPath: m.HostPath, Path: m.Path, Mode: m.Mode, Dir: rel, FromRoot: m.FromRoot, Overlay: m.Markers, ExportIgnored: m.Ignored}
}

// Upper, Work and Base are the mount's directories by role: an overlay's
// changes, its work directory, a copy's files as they were copied.
func (m Mounted) Upper() string { return filepath.Join(m.Dir, "upper") }

// Work is the overlay's work directory (see Upper).
func (m Mounted) Work() string { return filepath.Join(m.Dir, "work") }

// Base is a copy mount's files as they were copied (see Upper).
func (m Mounted) Base() string { return filepath.Join(m.Dir, "base") }

// Lower links to the host folder an overlay shows; the container mounts
// the link, whose path carries none of the characters an overlay's
// options cannot (see makeOverlayDirs).
func (m Mounted) Lower() string { return filepath.Join(m.Dir, "lower") }

// Prepare makes the directories the session's mounts need, copies
// the files of copy mounts that have not been copied yet, and creates each
// mount point, owned by uid:gid. Everything under workspaceDir is reached
// through an os.Root: the session may have planted symlinks there.
func Prepare(workspaceDir string, mounts []Mounted, uid, gid int) error {
	ws, err := os.OpenRoot(workspaceDir)
	if err != nil {
		return fmt.Errorf("opening the workspace directory: %w", err)
	}
	defer ws.Close()
	for _, m := range mounts {
		switch m.Mode {
		case Overlay:
			if err := makeOverlayDirs(m); err != nil {
				return err
			}
		case Copy:
			if _, err := os.Lstat(m.Base()); err == nil {
				continue // copied when the session started; the session's edits are in the workspace
			}
			if err := CopyFiles(m, ws, uid, gid); err != nil {
				return fmt.Errorf("copying %s to /workspace/%s: %w", m.HostPath, m.Path, err)
			}
			continue
		}
		if err := makeMountPoint(ws, m.Path, uid, gid); err != nil {
			return fmt.Errorf("creating the mount point /workspace/%s: %w", m.Path, err)
		}
	}
	return nil
}

// PrepareRemote makes, in the session directory here, the base of
// each copy mount not yet copied (the workspace's copy is uploaded) and
// the directories of each overlay, which the Podman host sees at the same
// path (Config.SharedPaths).
func PrepareRemote(mounts []Mounted) error {
	for _, m := range mounts {
		if m.Mode == Overlay {
			if err := makeOverlayDirs(m); err != nil {
				return err
			}
		}
		if m.Mode != Copy {
			continue
		}
		if _, err := os.Lstat(m.Base()); err == nil {
			continue
		}
		if err := CopyFiles(m, nil, 0, 0); err != nil {
			return fmt.Errorf("copying %s: %w", m.HostPath, err)
		}
	}
	return nil
}

// makeOverlayDirs makes an overlay mount's upper and work directories, and
// the link to its host folder the container mounts: Podman writes the
// folder's path into the overlay's mount options, where the kernel reads
// ',' as the end of an option and '\' as an escape (a folder "a,b" was
// "no such file or directory"), and a link in the session directory
// names it with none of them (CheckOverlayPath checks that directory).
func makeOverlayDirs(m Mounted) error {
	for _, d := range []string{m.Upper(), m.Work()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating the overlay directories of %s: %w", m.Path, err)
		}
	}
	if target, err := os.Readlink(m.Lower()); err == nil && target == m.HostPath {
		return nil
	}
	if err := os.Remove(m.Lower()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replacing the link to %s: %w", m.HostPath, err)
	}
	if err := os.Symlink(m.HostPath, m.Lower()); err != nil {
		return fmt.Errorf("linking to %s for its overlay: %w", m.HostPath, err)
	}
	return nil
}

// makeMountPoint creates the directory a mount covers, and its parents,
// inside ws; an existing directory is kept.
func makeMountPoint(ws *os.Root, path string, uid, gid int) error {
	dir := ""
	for _, seg := range strings.Split(path, "/") {
		dir = filepath.Join(dir, seg)
		err := ws.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			info, err := ws.Lstat(dir)
			if err != nil {
				return err
			}
			if !info.IsDir() {
				return fmt.Errorf("/workspace/%s is a %s, not a directory; remove it (rm) so the folder can be mounted", dir, fileType(info.Mode()))
			}
			continue
		}
		if err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := ws.Lchown(dir, uid, gid); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileType names what a file is, for a message.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return "special file"
}

// Infos describes resolved mounts, not yet given to a session.
func Infos(mounts []Resolved) []Info {
	out := make([]Info, 0, len(mounts))
	for _, mt := range mounts {
		out = append(out, Info{HostPath: mt.HostPath, Path: mt.Path, Mode: mt.Mode})
	}
	return out
}

// AnyWritable reports whether a mount of list can change.
func AnyWritable(list []Mounted) bool {
	for _, m := range list {
		if m.Mode != ReadOnly {
			return true
		}
	}
	return false
}

// Kept are the mounts of the kept workspace called name, in the session
// directory sessionDir, made by an earlier session, as it recorded them:
// the configured ones must be the same, and the client roots it mounted
// are mounted again, if still allowed (under roots, outside cacheDir).
func Kept(name string, configured []Mounted, recorded []Info, roots []string, cacheDir, sessionDir string) ([]Mounted, error) {
	var fromConfig []Info
	for _, mi := range recorded {
		if !mi.FromRoot {
			fromConfig = append(fromConfig, mi)
		}
	}
	same := len(fromConfig) == len(configured)
	for i := 0; same && i < len(configured); i++ {
		c, r := configured[i], fromConfig[i]
		same = c.HostPath == r.HostPath && c.Path == r.Path && c.Mode == r.Mode
	}
	if !same {
		var was, now []string
		for _, mi := range fromConfig {
			was = append(was, Mount{HostPath: mi.HostPath, Path: mi.Path, Mode: mi.Mode}.String())
		}
		for _, c := range configured {
			now = append(now, c.Mount.String())
		}
		return nil, fmt.Errorf("workspace %q was made with the mounts [%s], and this server mounts [%s]; "+
			"start it with the same --mount flags (its folders' changes belong to those), or choose another workspace name",
			name, strings.Join(was, " "), strings.Join(now, " "))
	}
	list := configured
	for _, mi := range recorded {
		if !mi.FromRoot {
			continue
		}
		r, err := Resolve(Mount{HostPath: mi.HostPath, Path: mi.Path, Mode: mi.Mode}, roots, cacheDir)
		if err != nil {
			return nil, fmt.Errorf("workspace %q mounts the client root %s, which cannot be mounted now: %w", name, mi.HostPath, err)
		}
		list = append(list, Mounted{Resolved: r, Dir: filepath.Join(sessionDir, mi.Dir), FromRoot: true})
	}
	return list, nil
}

// Package keep holds a kept workspace's records on the cache disk: its
// name, the layout of its directory, its record (workspace.json), its
// owner (owner.json), the files of the handles a handoff gives, and the
// records of the workspace handles open on it. It owns no lock and no state in memory: the lock
// file that says a session owns a workspace is taken by package
// workspace, which owns the session that holds it.
package keep

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
)

// A kept workspace outlives its sessions and its server process; one
// session of one process owns it at a time. Layout:
//
//	<cache>/workspaces/<name>/lock            held locked (flock) by the owning process
//	<cache>/workspaces/<name>/owner.json      who owns it, for the message a second asker gets
//	<cache>/workspaces/<name>/workspace.json  its record: when made and last used, by whom
//	<cache>/workspaces/<name>/session/        its session directory (/workspace, mounts' changes)
//	<cache>/workspaces/<name>/disk.img        that directory's filesystem, when disks are limited
//	<cache>/workspaces/<name>/store/          its checkpoints
//	<cache>/workspaces/<name>/export.json     where a handed-over one's changes are due (workspace/handoff_export.go)
//	<cache>/workspaces/<name>/handles/        the records of the 2026-07-28 handles open on it, by digest (handles.go)
const (
	// WorkspacesDir is the directory under the cache the kept workspaces live in.
	WorkspacesDir = "workspaces"
	// OwnerFile is the file naming the session that owns a kept workspace.
	OwnerFile = "owner.json"
	// RecordFile is a kept workspace's record (WorkspaceRecord).
	RecordFile = "workspace.json"
	// SessionDir is a kept workspace's session directory.
	SessionDir = "session"
	// DiskImage is the filesystem image of SessionDir, when disks are limited.
	DiskImage = "disk.img"
	// StoreDir is a kept workspace's checkpoint store.
	StoreDir = "store"
)

// namePattern is what a kept workspace may be called: it names a directory.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrWorkspaceInUse means another session owns the kept workspace asked for.
var ErrWorkspaceInUse = errors.New("the workspace is in use")

// CheckWorkspaceName says what is wrong with a kept workspace's name.
func CheckWorkspaceName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("workspace name %q must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Root returns where the kept workspace name lives under cacheDir.
func Root(cacheDir, name string) string { return filepath.Join(cacheDir, WorkspacesDir, name) }

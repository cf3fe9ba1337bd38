package workspace

import (
	"github.com/wink-mcp/wink-mcp/workspace/difftext"
	"github.com/wink-mcp/wink-mcp/workspace/folders"
)

// Limits of the views of a session's changes (package difftext).
const (
	// DiffTextLimit is the largest file a diff shows as text.
	DiffTextLimit = difftext.TextLimit
	// MaxDiffBytes bounds a whole diff; past it the diff stops, saying so.
	MaxDiffBytes = difftext.MaxBytes
)

// FolderChange is one path a session created, modified or deleted in a
// host folder mounted in its workspace (folders.Change).
type FolderChange = folders.Change

// DiffResult is a unified diff of a session's changes (difftext.Result).
type DiffResult = difftext.Result

// newFolders returns the session's view of what it changed in its mounted
// host folders (package folders), which serves workspace_changes and
// workspace_diff itself (Parts).
func (s *Session) newFolders() *folders.Part {
	d := folders.Deps{
		Enter:  s.enter,
		Mounts: func() []MountInfo { return s.Info().Mounts },
		Dir:    func() string { return s.dir },
	}
	if s.m.cfg.FilesOnEngineHost {
		d.PullCopies = s.mounts.pullCopies
	}
	return folders.New(d)
}

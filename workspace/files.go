package workspace

import (
	"context"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/files"
)

// Results of the file operations, as the agent reports them.
type (
	ListResult   = wire.ListResult
	Entry        = wire.Entry
	ReadResult   = wire.ReadResult
	GlobResult   = wire.GlobResult
	GrepResult   = wire.GrepResult
	RemoveResult = wire.RemoveResult
	PythonResult = wire.PythonResult
	PythonWrite  = wire.PythonWrite
	FileRef      = wire.FileRef
	WriteOutcome = wire.WriteOutcome
	GlobMatch    = wire.GlobMatch
	GrepMatch    = wire.GrepMatch
)

// Limits of the file operations.
const (
	MaxFileChars     = wire.MaxFileChars
	MaxResults       = wire.MaxResults
	MaxReadLines     = wire.MaxReadLines
	MaxLineChars     = wire.MaxLineChars
	MaxGrepLineChars = wire.MaxGrepLineChars
	MaxFileBytes     = wire.MaxFileBytes
	MaxBinaryBytes   = wire.MaxBinaryBytes
)

// Entry kinds.
const (
	KindFile      = wire.KindFile
	KindDirectory = wire.KindDirectory
	KindSymlink   = wire.KindSymlink
	KindOther     = wire.KindOther
)

// Write modes of PythonWrite.
const (
	WriteCreate    = wire.WriteCreate
	WriteOverwrite = wire.WriteOverwrite
	WriteAppend    = wire.WriteAppend
)

// The file tools' requests and results (package files).
type (
	// FileWrite is what WriteFile did. Version counts the session's writes to the file.
	FileWrite = files.Write
	// FileEdit is what EditFile did.
	FileEdit = files.Edit
	// EditRequest replaces old with new in a file.
	EditRequest = files.EditRequest
	// GrepRequest searches files for an RE2 pattern.
	GrepRequest = files.GrepRequest
	// PythonRequest runs code with python3 in the container.
	PythonRequest = files.PythonRequest
)

// newFiles returns the session's files as the file tools see them
// (package files), each call one of the session's (call); the watcher is
// made first.
func (s *Session) newFiles() *files.Part {
	return files.New(files.Deps{
		Call:        s.call,
		Touched:     &s.touched,
		Changed:     func(ctx context.Context, paths ...string) { s.m.changed(ctx, s.who.id(), paths...) },
		Commanded:   s.watcher.Commanded,
		Image:       func() string { return s.Info().Image },
		PythonImage: LocalImage,
	})
}

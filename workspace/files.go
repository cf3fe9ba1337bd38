package workspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
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

// FileWrite is what WriteFile did. Version counts the session's writes to the file.
type FileWrite struct {
	Path      string
	SizeBytes int64
	Created   bool
	Version   int
}

// FileEdit is what EditFile did.
type FileEdit struct {
	Path         string
	Replacements int
	SizeBytes    int64
	Version      int
}

// EditRequest replaces old with new in a file.
type EditRequest struct {
	Path       string
	Old, New   string
	ReplaceAll bool
}

// GrepRequest searches files for an RE2 pattern.
type GrepRequest struct {
	Pattern, Path, Glob string
}

// PythonRequest runs code with python3 in the container.
type PythonRequest struct {
	Code    string
	Globals map[string]string
	Reads   []string
	Writes  []PythonWrite
	Timeout time.Duration
	// Grace is as in ExecRequest.
	Grace       time.Duration
	OutputChars int
	// Progress is as in ExecRequest.
	Progress func(Progress)
}

// call sends one typed request to the session's agent.
func call[R any](ctx context.Context, s *Session, op string, args any) (R, error) {
	var r R
	err := s.call(ctx, op, args, &r, nil)
	return r, err
}

// List describes a directory's entries, or one file.
func (s *Session) List(ctx context.Context, path string) (ListResult, error) {
	return call[ListResult](ctx, s, wire.OpList, wire.PathArgs{Path: path})
}

// ReadFile returns up to limit lines of a UTF-8 file from line offset (0-based).
func (s *Session) ReadFile(ctx context.Context, path string, offset, limit int) (ReadResult, error) {
	return call[ReadResult](ctx, s, wire.OpRead, wire.ReadArgs{Path: path, Offset: offset, Limit: limit})
}

// WriteFile creates or atomically replaces a file, creating its parents.
func (s *Session) WriteFile(ctx context.Context, path, content string) (FileWrite, error) {
	r, err := call[wire.WriteResult](ctx, s, wire.OpWrite, wire.WriteArgs{Path: path, Content: content})
	if err != nil {
		return FileWrite{}, err
	}
	return FileWrite{Path: r.Path, SizeBytes: r.SizeBytes, Created: r.Created, Version: s.wrote(ctx, r.Path, r.SizeBytes, r.Seq)}, nil
}

// WriteBytes is WriteFile for any bytes, at most wire.MaxBinaryBytes.
func (s *Session) WriteBytes(ctx context.Context, path string, data []byte) (FileWrite, error) {
	r, err := call[wire.WriteResult](ctx, s, wire.OpWrite, wire.WriteArgs{Path: path, Binary: true, Data: data})
	if err != nil {
		return FileWrite{}, err
	}
	return FileWrite{Path: r.Path, SizeBytes: r.SizeBytes, Created: r.Created, Version: s.wrote(ctx, r.Path, r.SizeBytes, r.Seq)}, nil
}

// ReadBytes returns up to limit bytes of any file from offset.
func (s *Session) ReadBytes(ctx context.Context, path string, offset int64, limit int) (BytesRead, error) {
	return call[BytesRead](ctx, s, wire.OpReadBytes, wire.ReadBytesArgs{Path: path, Offset: offset, Limit: limit})
}

// EditFile replaces text in a file, atomically.
func (s *Session) EditFile(ctx context.Context, req EditRequest) (FileEdit, error) {
	r, err := call[wire.EditResult](ctx, s, wire.OpEdit, wire.EditArgs{Path: req.Path, Old: req.Old, New: req.New, ReplaceAll: req.ReplaceAll})
	if err != nil {
		return FileEdit{}, err
	}
	return FileEdit{Path: r.Path, Replacements: r.Replacements, SizeBytes: r.SizeBytes, Version: s.wrote(ctx, r.Path, r.SizeBytes, r.Seq)}, nil
}

// Glob finds files whose paths under path match pattern.
func (s *Session) Glob(ctx context.Context, pattern, path string) (GlobResult, error) {
	return call[GlobResult](ctx, s, wire.OpGlob, wire.GlobArgs{Pattern: pattern, Path: path})
}

// Grep finds lines matching an RE2 pattern.
func (s *Session) Grep(ctx context.Context, req GrepRequest) (GrepResult, error) {
	return call[GrepResult](ctx, s, wire.OpGrep, wire.GrepArgs{Pattern: req.Pattern, Path: req.Path, Glob: req.Glob})
}

// Remove deletes a file, a symlink (not its target) or a directory tree.
func (s *Session) Remove(ctx context.Context, path string) (RemoveResult, error) {
	r, err := call[RemoveResult](ctx, s, wire.OpRemove, wire.PathArgs{Path: path})
	if err == nil {
		s.m.changed(ctx, s.id(), s.touched.Removed(r.Path, r.Seq)...)
	}
	return r, err
}

// Python runs code with python3 in the container.
func (s *Session) Python(ctx context.Context, req PythonRequest) (PythonResult, error) {
	var r PythonResult
	err := s.call(ctx, wire.OpPython, wire.PythonArgs{
		Code: req.Code, Globals: req.Globals, Reads: req.Reads, Writes: req.Writes,
		TimeoutMillis: req.Timeout.Milliseconds(), GraceMillis: req.Grace.Milliseconds(), OutputChars: req.OutputChars, Progress: req.Progress != nil,
	}, &r, req.Progress)
	var werr *wire.Error
	if errors.As(err, &werr) && werr.Code == wire.CodeUnavailable {
		return r, fmt.Errorf("evaluate_python needs python3, and the image %s has none; use an image with python3 "+
			"(`make setup` builds %s) or run the code with podman_shell", s.Info().Image, LocalImage)
	}
	for _, w := range r.Writes {
		if w.Applied {
			s.wrote(ctx, w.Path, w.SizeBytes, w.Seq)
		}
	}
	s.watcher.Commanded(ctx, r.Changes)
	return r, err
}

// ReadWhole returns a UTF-8 file's whole content, exactly.
func (s *Session) ReadWhole(ctx context.Context, path string) (string, error) {
	r, err := call[ReadResult](ctx, s, wire.OpRead, wire.ReadArgs{Path: path, Whole: true})
	return r.Content, err
}

// wrote records a write (the agent's change seq) in the snapshot, tells the
// change listener, and returns the file's new version.
func (s *Session) wrote(ctx context.Context, path string, size, seq int64) int {
	v := s.touched.Wrote(path, size, seq)
	s.m.changed(ctx, s.id(), path)
	return v
}

// Snapshot lists the files this session's tools and commands wrote,
// edited or removed.
func (s *Session) Snapshot() []TouchedFile { return s.touched.List() }

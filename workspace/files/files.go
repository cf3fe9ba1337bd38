// Package files is the part of a session's workspace the file tools take
// (tools.FileReader, FileWriter, FileSearcher, PythonRunner): each call
// is one request to the container's agent, and each write is recorded in
// the session's touched files and told to the change listener.
//
// A Part reaches its session only through its Deps, never by importing
// workspace. It has no state and no lock of its own: its calls go
// through the session's (Deps.Call, which counts the call and takes the
// gate), and the touched files' record it writes to is a leaf.
package files

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/touched"
)

// Write is what WriteFile did. Version counts the session's writes to the file.
type Write struct {
	Path      string
	SizeBytes int64
	Created   bool
	Version   int
}

// Edit is what EditFile did.
type Edit struct {
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
	Writes  []wire.PythonWrite
	Timeout time.Duration
	// Grace is how long the code's process tree has between SIGTERM and
	// SIGKILL when the timeout passes or the call is cancelled.
	Grace       time.Duration
	OutputChars int
	// Progress, if not nil, receives a report every few seconds while the
	// code runs; it may be slow, reports are dropped rather than queued.
	Progress func(wire.Progress)
}

// Deps is what a Part needs of its session.
type Deps struct {
	// Call sends one request to the agent, starting the container first if
	// needed, as a call of the session's; progress, if not nil, receives
	// the request's progress reports.
	Call func(ctx context.Context, op string, args, result any, progress func(wire.Progress)) error
	// Touched is the session's record of the files its tools and
	// commands touched.
	Touched *touched.Snapshot
	// Changed tells the change listener that paths changed.
	Changed func(ctx context.Context, paths ...string)
	// Commanded records, and tells the listener of, the changes the
	// processes of a call made.
	Commanded func(ctx context.Context, changes []wire.Change)
	// Image is the image of the session's container.
	Image func() string
	// PythonImage names an image that has python3, for the error of a
	// container that has none.
	PythonImage string
}

// Part is the files of a session's workspace, as the file tools see
// them. It is safe for concurrent use.
type Part struct{ d Deps }

// New returns a session's files.
func New(d Deps) *Part { return &Part{d: d} }

// call sends one typed request to the session's agent.
func call[R any](ctx context.Context, p *Part, op string, args any) (R, error) {
	var r R
	err := p.d.Call(ctx, op, args, &r, nil)
	return r, err
}

// List describes a directory's entries, or one file.
func (p *Part) List(ctx context.Context, path string) (wire.ListResult, error) {
	return call[wire.ListResult](ctx, p, wire.OpList, wire.PathArgs{Path: path})
}

// ReadFile returns up to limit lines of a UTF-8 file from line offset (0-based).
func (p *Part) ReadFile(ctx context.Context, path string, offset, limit int) (wire.ReadResult, error) {
	return call[wire.ReadResult](ctx, p, wire.OpRead, wire.ReadArgs{Path: path, Offset: offset, Limit: limit})
}

// WriteFile creates or atomically replaces a file, creating its parents.
func (p *Part) WriteFile(ctx context.Context, path, content string) (Write, error) {
	r, err := call[wire.WriteResult](ctx, p, wire.OpWrite, wire.WriteArgs{Path: path, Content: content})
	if err != nil {
		return Write{}, err
	}
	return Write{Path: r.Path, SizeBytes: r.SizeBytes, Created: r.Created, Version: p.wrote(ctx, r.Path, r.SizeBytes, r.Seq)}, nil
}

// WriteBytes is WriteFile for any bytes, at most wire.MaxBinaryBytes.
func (p *Part) WriteBytes(ctx context.Context, path string, data []byte) (Write, error) {
	r, err := call[wire.WriteResult](ctx, p, wire.OpWrite, wire.WriteArgs{Path: path, Binary: true, Data: data})
	if err != nil {
		return Write{}, err
	}
	return Write{Path: r.Path, SizeBytes: r.SizeBytes, Created: r.Created, Version: p.wrote(ctx, r.Path, r.SizeBytes, r.Seq)}, nil
}

// ReadBytes returns up to limit bytes of any file from offset.
func (p *Part) ReadBytes(ctx context.Context, path string, offset int64, limit int) (wire.ReadBytesResult, error) {
	return call[wire.ReadBytesResult](ctx, p, wire.OpReadBytes, wire.ReadBytesArgs{Path: path, Offset: offset, Limit: limit})
}

// EditFile replaces text in a file, atomically.
func (p *Part) EditFile(ctx context.Context, req EditRequest) (Edit, error) {
	r, err := call[wire.EditResult](ctx, p, wire.OpEdit, wire.EditArgs{Path: req.Path, Old: req.Old, New: req.New, ReplaceAll: req.ReplaceAll})
	if err != nil {
		return Edit{}, err
	}
	return Edit{Path: r.Path, Replacements: r.Replacements, SizeBytes: r.SizeBytes, Version: p.wrote(ctx, r.Path, r.SizeBytes, r.Seq)}, nil
}

// Glob finds files whose paths under path match pattern.
func (p *Part) Glob(ctx context.Context, pattern, path string) (wire.GlobResult, error) {
	return call[wire.GlobResult](ctx, p, wire.OpGlob, wire.GlobArgs{Pattern: pattern, Path: path})
}

// Grep finds lines matching an RE2 pattern.
func (p *Part) Grep(ctx context.Context, req GrepRequest) (wire.GrepResult, error) {
	return call[wire.GrepResult](ctx, p, wire.OpGrep, wire.GrepArgs{Pattern: req.Pattern, Path: req.Path, Glob: req.Glob})
}

// Remove deletes a file, a symlink (not its target) or a directory tree.
func (p *Part) Remove(ctx context.Context, path string) (wire.RemoveResult, error) {
	r, err := call[wire.RemoveResult](ctx, p, wire.OpRemove, wire.PathArgs{Path: path})
	if err == nil {
		p.d.Changed(ctx, p.d.Touched.Removed(r.Path, r.Seq)...)
	}
	return r, err
}

// Python runs code with python3 in the container.
func (p *Part) Python(ctx context.Context, req PythonRequest) (wire.PythonResult, error) {
	var r wire.PythonResult
	err := p.d.Call(ctx, wire.OpPython, wire.PythonArgs{
		Code: req.Code, Globals: req.Globals, Reads: req.Reads, Writes: req.Writes,
		TimeoutMillis: req.Timeout.Milliseconds(), GraceMillis: req.Grace.Milliseconds(), OutputChars: req.OutputChars, Progress: req.Progress != nil,
	}, &r, req.Progress)
	var werr *wire.Error
	if errors.As(err, &werr) && werr.Code == wire.CodeUnavailable {
		return r, fmt.Errorf("evaluate_python needs python3, and the image %s has none; use an image with python3 "+
			"(`make setup` builds %s) or run the code with podman_shell", p.d.Image(), p.d.PythonImage)
	}
	for _, w := range r.Writes {
		if w.Applied {
			p.wrote(ctx, w.Path, w.SizeBytes, w.Seq)
		}
	}
	p.d.Commanded(ctx, r.Changes)
	return r, err
}

// ReadWhole returns a UTF-8 file's whole content, exactly.
func (p *Part) ReadWhole(ctx context.Context, path string) (string, error) {
	r, err := call[wire.ReadResult](ctx, p, wire.OpRead, wire.ReadArgs{Path: path, Whole: true})
	return r.Content, err
}

// wrote records a write (the agent's change seq) in the touched files,
// tells the change listener, and returns the file's new version.
func (p *Part) wrote(ctx context.Context, path string, size, seq int64) int {
	v := p.d.Touched.Wrote(path, size, seq)
	p.d.Changed(ctx, path)
	return v
}

// Snapshot lists the files this session's tools and commands wrote,
// edited or removed.
func (p *Part) Snapshot() []touched.TouchedFile { return p.d.Touched.List() }

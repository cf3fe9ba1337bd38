package tools

import (
	"context"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// fakeFiles records what the file tools ask of it and answers from its fields.
type fakeFiles struct {
	recorder
	list  workspace.ListResult
	read  workspace.ReadResult
	glob  workspace.GlobResult
	grep  workspace.GrepResult
	edits []workspace.EditRequest
	greps []workspace.GrepRequest
}

var (
	_ FileReader   = (*fakeFiles)(nil)
	_ FileWriter   = (*fakeFiles)(nil)
	_ FileSearcher = (*fakeFiles)(nil)
)

func (f *fakeFiles) List(_ context.Context, path string) (workspace.ListResult, error) {
	f.note("ls %s", path)
	return f.list, f.err
}

func (f *fakeFiles) ReadFile(_ context.Context, path string, offset, limit int) (workspace.ReadResult, error) {
	f.note("read %s", path)
	r := f.read
	r.Path, r.Offset = path, offset
	if r.Limit == 0 {
		r.Limit = limit
	}
	return r, f.err
}

func (f *fakeFiles) ReadBytes(_ context.Context, path string, offset int64, limit int) (workspace.BytesRead, error) {
	f.note("read bytes %s %d %d", path, offset, limit)
	return workspace.BytesRead{Path: path, Offset: offset}, f.err
}

func (f *fakeFiles) WriteFile(_ context.Context, path, content string) (workspace.FileWrite, error) {
	f.note("write %s", path)
	return workspace.FileWrite{Path: path, SizeBytes: int64(len(content)), Created: true, Version: 1}, f.err
}

func (f *fakeFiles) WriteBytes(_ context.Context, path string, data []byte) (workspace.FileWrite, error) {
	f.note("write bytes %s %d", path, len(data))
	return workspace.FileWrite{Path: path, SizeBytes: int64(len(data))}, f.err
}

func (f *fakeFiles) EditFile(_ context.Context, req workspace.EditRequest) (workspace.FileEdit, error) {
	f.edits = append(f.edits, req)
	return workspace.FileEdit{Path: req.Path, Replacements: 1, Version: 2}, f.err
}

func (f *fakeFiles) Glob(_ context.Context, pattern, path string) (workspace.GlobResult, error) {
	f.note("glob %s", path)
	return f.glob, f.err
}

func (f *fakeFiles) Grep(_ context.Context, req workspace.GrepRequest) (workspace.GrepResult, error) {
	f.greps = append(f.greps, req)
	return f.grep, f.err
}

func (f *fakeFiles) Remove(_ context.Context, path string) (workspace.RemoveResult, error) {
	f.note("rm %s", path)
	return workspace.RemoveResult{Path: path, RemovedEntries: 1}, f.err
}

// fakePython records what evaluate_python asks of it and answers pyRes.
type fakePython struct {
	recorder
	python []workspace.PythonRequest
	pyRes  workspace.PythonResult
}

var _ PythonRunner = (*fakePython)(nil)

func (f *fakePython) Python(_ context.Context, req workspace.PythonRequest) (workspace.PythonResult, error) {
	f.python = append(f.python, req)
	return f.pyRes, f.err
}

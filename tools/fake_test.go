package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// fakeWorkspace records what the tools ask of it and answers from its fields.
type fakeWorkspace struct {
	err error

	execs  []workspace.ExecRequest
	result workspace.ExecResult
	resets int
	starts int

	calls  []string // "op path" for every file operation
	list   workspace.ListResult
	read   workspace.ReadResult
	glob   workspace.GlobResult
	grep   workspace.GrepResult
	edits  []workspace.EditRequest
	greps  []workspace.GrepRequest
	python []workspace.PythonRequest
	pyRes  workspace.PythonResult

	mounts  []workspace.MountInfo
	changes []workspace.FolderChange
	diff    workspace.DiffResult
	state   workspace.State
}

var _ workspace.Workspace = (*fakeWorkspace)(nil)

func (f *fakeWorkspace) Checkpoint(_ context.Context, message string) (workspace.Checkpoint, error) {
	f.calls = append(f.calls, "checkpoint "+message)
	return workspace.Checkpoint{ID: "c1", Message: message}, f.err
}

func (f *fakeWorkspace) Checkpoints(context.Context) (workspace.CheckpointList, error) {
	f.calls = append(f.calls, "checkpoints")
	return workspace.CheckpointList{}, f.err
}

func (f *fakeWorkspace) Restore(_ context.Context, id string) (workspace.RestoreResult, error) {
	f.calls = append(f.calls, "restore "+id)
	return workspace.RestoreResult{Checkpoint: workspace.Checkpoint{ID: id}}, f.err
}

func (f *fakeWorkspace) CheckpointDiff(_ context.Context, from, to, prefix string) (workspace.DiffResult, error) {
	f.calls = append(f.calls, fmt.Sprintf("checkpoint diff %s %s %s", from, to, prefix))
	return f.diff, f.err
}

func (f *fakeWorkspace) Handoff(_ context.Context, ttl time.Duration) (workspace.Handoff, error) {
	f.calls = append(f.calls, fmt.Sprintf("handoff %s", ttl))
	return workspace.Handoff{Handle: strings.Repeat("a", 64)}, f.err
}

func (f *fakeWorkspace) Attach(_ context.Context, handle string) (workspace.Attached, error) {
	f.calls = append(f.calls, "attach "+handle)
	return workspace.Attached{}, f.err
}

func (f *fakeWorkspace) DeleteCheckpoints(_ context.Context, ids []string) (int64, error) {
	f.calls = append(f.calls, fmt.Sprintf("delete checkpoints %v", ids))
	return 0, f.err
}

func (f *fakeWorkspace) OpenPort(_ context.Context, port int) (workspace.PortInfo, []workspace.PortInfo, error) {
	f.calls = append(f.calls, fmt.Sprintf("open port %d", port))
	p := workspace.PortInfo{Port: port, URL: "http://127.0.0.1:1/"}
	return p, []workspace.PortInfo{p}, f.err
}

func (f *fakeWorkspace) ClosePort(port int) ([]workspace.PortInfo, error) {
	f.calls = append(f.calls, fmt.Sprintf("close port %d", port))
	return nil, f.err
}

func (f *fakeWorkspace) Ports() []workspace.PortInfo { return nil }

func (f *fakeWorkspace) State(context.Context) (workspace.State, error) {
	f.calls = append(f.calls, "state")
	return f.state, f.err
}

func (f *fakeWorkspace) StartJob(_ context.Context, req workspace.JobRequest) (workspace.JobStart, error) {
	f.calls = append(f.calls, fmt.Sprintf("start job %v", req.Argv))
	return workspace.JobStart{Job: workspace.JobInfo{ID: "j-1", State: "running"}}, f.err
}

func (f *fakeWorkspace) JobStatus(_ context.Context, id string) (workspace.JobInfo, error) {
	f.calls = append(f.calls, "status "+id)
	return workspace.JobInfo{ID: id, State: "running"}, f.err
}

func (f *fakeWorkspace) JobOutput(_ context.Context, req workspace.JobOutputRequest) (workspace.JobOutput, error) {
	f.calls = append(f.calls, fmt.Sprintf("output %s %s %d %d %d", req.ID, req.Stream, req.Offset, req.Line, req.Limit))
	return workspace.JobOutput{Job: workspace.JobInfo{ID: req.ID}}, f.err
}

func (f *fakeWorkspace) SignalJob(_ context.Context, id, signal string, grace time.Duration) (workspace.JobInfo, error) {
	f.calls = append(f.calls, fmt.Sprintf("signal %s %s %s", id, signal, grace))
	return workspace.JobInfo{ID: id}, f.err
}

func (f *fakeWorkspace) WriteJobInput(_ context.Context, id, data string, closeStdin bool) (workspace.JobInput, error) {
	f.calls = append(f.calls, fmt.Sprintf("input %s %q %v", id, data, closeStdin))
	return workspace.JobInput{Written: len(data)}, f.err
}

func (f *fakeWorkspace) ForgetJob(_ context.Context, id string) (workspace.JobInfo, error) {
	f.calls = append(f.calls, "forget "+id)
	return workspace.JobInfo{ID: id}, f.err
}

func (f *fakeWorkspace) WriteBytes(_ context.Context, path string, data []byte) (workspace.FileWrite, error) {
	f.calls = append(f.calls, fmt.Sprintf("write bytes %s %d", path, len(data)))
	return workspace.FileWrite{Path: path, SizeBytes: int64(len(data))}, f.err
}

func (f *fakeWorkspace) ReadBytes(_ context.Context, path string, offset int64, limit int) (workspace.BytesRead, error) {
	f.calls = append(f.calls, fmt.Sprintf("read bytes %s %d %d", path, offset, limit))
	return workspace.BytesRead{Path: path, Offset: offset}, f.err
}

func (f *fakeWorkspace) Jobs(context.Context) (workspace.JobList, error) {
	f.calls = append(f.calls, "list")
	return workspace.JobList{}, f.err
}

func (f *fakeWorkspace) Info() workspace.ContainerInfo {
	return workspace.ContainerInfo{Name: "wink-test", Image: "img", Mounts: f.mounts}
}

func (f *fakeWorkspace) Exec(_ context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
	f.execs = append(f.execs, req)
	return f.result, f.err
}

func (f *fakeWorkspace) Start(context.Context) (workspace.ContainerInfo, error) {
	f.starts++
	return f.Info(), f.err
}

func (f *fakeWorkspace) UseProfile(_ context.Context, name string, restart bool, _ func(workspace.Progress)) (workspace.ProfileChange, error) {
	f.calls = append(f.calls, fmt.Sprintf("profile %s restart=%v", name, restart))
	return workspace.ProfileChange{Profile: name, Image: "img-" + name, Container: f.Info()}, f.err
}

func (f *fakeWorkspace) Reset(context.Context) (workspace.ContainerInfo, error) {
	f.resets++
	return f.Info(), f.err
}

func (f *fakeWorkspace) List(_ context.Context, path string) (workspace.ListResult, error) {
	f.calls = append(f.calls, "ls "+path)
	return f.list, f.err
}

func (f *fakeWorkspace) ReadFile(_ context.Context, path string, offset, limit int) (workspace.ReadResult, error) {
	f.calls = append(f.calls, "read "+path)
	r := f.read
	r.Path, r.Offset = path, offset
	if r.Limit == 0 {
		r.Limit = limit
	}
	return r, f.err
}

func (f *fakeWorkspace) WriteFile(_ context.Context, path, content string) (workspace.FileWrite, error) {
	f.calls = append(f.calls, "write "+path)
	return workspace.FileWrite{Path: path, SizeBytes: int64(len(content)), Created: true, Version: 1}, f.err
}

func (f *fakeWorkspace) EditFile(_ context.Context, req workspace.EditRequest) (workspace.FileEdit, error) {
	f.edits = append(f.edits, req)
	return workspace.FileEdit{Path: req.Path, Replacements: 1, Version: 2}, f.err
}

func (f *fakeWorkspace) Glob(_ context.Context, pattern, path string) (workspace.GlobResult, error) {
	f.calls = append(f.calls, "glob "+path)
	return f.glob, f.err
}

func (f *fakeWorkspace) Grep(_ context.Context, req workspace.GrepRequest) (workspace.GrepResult, error) {
	f.greps = append(f.greps, req)
	return f.grep, f.err
}

func (f *fakeWorkspace) Remove(_ context.Context, path string) (workspace.RemoveResult, error) {
	f.calls = append(f.calls, "rm "+path)
	return workspace.RemoveResult{Path: path, RemovedEntries: 1}, f.err
}

func (f *fakeWorkspace) Python(_ context.Context, req workspace.PythonRequest) (workspace.PythonResult, error) {
	f.python = append(f.python, req)
	return f.pyRes, f.err
}

func (f *fakeWorkspace) Snapshot() []workspace.TouchedFile { return nil }
func (f *fakeWorkspace) Watching() workspace.WatchReport   { return workspace.WatchReport{} }

func (f *fakeWorkspace) Changes(_ context.Context, prefix string) ([]workspace.FolderChange, error) {
	f.calls = append(f.calls, "changes "+prefix)
	return f.changes, f.err
}

func (f *fakeWorkspace) Diff(_ context.Context, prefix string) (workspace.DiffResult, error) {
	f.calls = append(f.calls, "diff "+prefix)
	return f.diff, f.err
}

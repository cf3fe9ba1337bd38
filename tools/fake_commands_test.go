package tools

import (
	"context"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// fakeCommands records the commands podman_shell runs and answers result.
type fakeCommands struct {
	recorder
	execs  []workspace.ExecRequest
	result workspace.ExecResult
}

var (
	_ Commands   = (*fakeCommands)(nil)
	_ JobStarter = (*fakeCommands)(nil)
)

func (f *fakeCommands) Exec(_ context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
	f.execs = append(f.execs, req)
	return f.result, f.err
}

func (f *fakeCommands) StartJob(_ context.Context, req workspace.JobRequest) (workspace.JobStart, error) {
	f.note("start job %v", req.Argv)
	return workspace.JobStart{Job: workspace.JobInfo{ID: "j-1", State: "running"}}, f.err
}

// fakeContainer counts the starts and resets podman_shell asks for.
type fakeContainer struct {
	recorder
	starts int
	resets int
}

var _ Container = (*fakeContainer)(nil)

func (f *fakeContainer) Info() workspace.ContainerInfo {
	return workspace.ContainerInfo{Name: "wink-test", Image: "img"}
}

func (f *fakeContainer) Start(context.Context) (workspace.ContainerInfo, error) {
	f.starts++
	return f.Info(), f.err
}

func (f *fakeContainer) Reset(context.Context) (workspace.ContainerInfo, error) {
	f.resets++
	return f.Info(), f.err
}

// fakeShell is what podman_shell takes: its commands and its container.
type fakeShell struct {
	fakeCommands
	fakeContainer
}

// fakeJobs records what the job tool asks of it.
type fakeJobs struct{ recorder }

var _ JobControl = (*fakeJobs)(nil)

func (f *fakeJobs) JobStatus(_ context.Context, id string) (workspace.JobInfo, error) {
	f.note("status %s", id)
	return workspace.JobInfo{ID: id, State: "running"}, f.err
}

func (f *fakeJobs) JobOutput(_ context.Context, req workspace.JobOutputRequest) (workspace.JobOutput, error) {
	f.note("output %s %s %d %d %d", req.ID, req.Stream, req.Offset, req.Line, req.Limit)
	return workspace.JobOutput{Job: workspace.JobInfo{ID: req.ID}}, f.err
}

func (f *fakeJobs) SignalJob(_ context.Context, id, signal string, grace time.Duration) (workspace.JobInfo, error) {
	f.note("signal %s %s %s", id, signal, grace)
	return workspace.JobInfo{ID: id}, f.err
}

func (f *fakeJobs) WriteJobInput(_ context.Context, id, data string, closeStdin bool) (workspace.JobInput, error) {
	f.note("input %s %q %v", id, data, closeStdin)
	return workspace.JobInput{Written: len(data)}, f.err
}

func (f *fakeJobs) Jobs(context.Context) (workspace.JobList, error) {
	f.note("list")
	return workspace.JobList{}, f.err
}

func (f *fakeJobs) ForgetJob(_ context.Context, id string) (workspace.JobInfo, error) {
	f.note("forget %s", id)
	return workspace.JobInfo{ID: id}, f.err
}

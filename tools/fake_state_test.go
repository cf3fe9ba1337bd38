package tools

import (
	"context"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// fakeChanges records what workspace_changes and workspace_diff ask of it
// and answers from its fields.
type fakeChanges struct {
	recorder
	mounts  []workspace.MountInfo
	changes []workspace.FolderChange
	diff    workspace.DiffResult
}

var _ FolderChanges = (*fakeChanges)(nil)

func (f *fakeChanges) Mounts() []workspace.MountInfo { return f.mounts }

func (f *fakeChanges) Changes(_ context.Context, prefix string) ([]workspace.FolderChange, error) {
	f.note("changes %s", prefix)
	return f.changes, f.err
}

func (f *fakeChanges) Diff(_ context.Context, prefix string) (workspace.DiffResult, error) {
	f.note("diff %s", prefix)
	return f.diff, f.err
}

// fakePorts records what workspace_port asks of it.
type fakePorts struct{ recorder }

var _ PortPreviews = (*fakePorts)(nil)

func (f *fakePorts) OpenPort(_ context.Context, port int) (workspace.PortInfo, []workspace.PortInfo, error) {
	f.note("open port %d", port)
	p := workspace.PortInfo{Port: port, URL: "http://127.0.0.1:1/"}
	return p, []workspace.PortInfo{p}, f.err
}

func (f *fakePorts) ClosePort(port int) ([]workspace.PortInfo, error) {
	f.note("close port %d", port)
	return nil, f.err
}

func (f *fakePorts) Ports() []workspace.PortInfo { return nil }

// fakeCheckpoints records what the checkpoint tools ask of it.
type fakeCheckpoints struct {
	recorder
	diff workspace.DiffResult
}

var _ Checkpointer = (*fakeCheckpoints)(nil)

func (f *fakeCheckpoints) Checkpoint(_ context.Context, message string) (workspace.Checkpoint, error) {
	f.note("checkpoint %s", message)
	return workspace.Checkpoint{ID: "c1", Message: message}, f.err
}

func (f *fakeCheckpoints) Checkpoints(context.Context) (workspace.CheckpointList, error) {
	f.note("checkpoints")
	return workspace.CheckpointList{}, f.err
}

func (f *fakeCheckpoints) Restore(_ context.Context, id string) (workspace.RestoreResult, error) {
	f.note("restore %s", id)
	return workspace.RestoreResult{Checkpoint: workspace.Checkpoint{ID: id}}, f.err
}

func (f *fakeCheckpoints) CheckpointDiff(_ context.Context, from, to, prefix string) (workspace.DiffResult, error) {
	f.note("checkpoint diff %s %s %s", from, to, prefix)
	return f.diff, f.err
}

func (f *fakeCheckpoints) DeleteCheckpoints(_ context.Context, ids []string) (int64, error) {
	f.note("delete checkpoints %v", ids)
	return 0, f.err
}

// fakeHandoffs records what workspace_handoff and workspace_attach ask of it.
type fakeHandoffs struct{ recorder }

var _ Handoffs = (*fakeHandoffs)(nil)

func (f *fakeHandoffs) Handoff(_ context.Context, ttl time.Duration) (workspace.Handoff, error) {
	f.note("handoff %s", ttl)
	return workspace.Handoff{Handle: strings.Repeat("a", 64)}, f.err
}

func (f *fakeHandoffs) Attach(_ context.Context, handle string) (workspace.Attached, error) {
	f.note("attach %s", handle)
	return workspace.Attached{}, f.err
}

// fakeState records that workspace_info asked for the state, and answers state.
type fakeState struct {
	recorder
	state workspace.State
}

var _ StateReporter = (*fakeState)(nil)

func (f *fakeState) State(context.Context) (workspace.State, error) {
	f.note("state")
	return f.state, f.err
}

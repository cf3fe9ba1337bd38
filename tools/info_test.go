package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// workspace_info shows every part of the state, in its structured result
// and its text, and a workspace without a container as such.
func TestWorkspaceInfoResult(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	st := workspace.State{Container: "wink-abc", ContainerState: workspace.ContainerRunning, Since: at, Image: "img:1", Profile: "go",
		Kept: "proj", Created: at.Add(-time.Hour), LastUsed: at.Add(time.Minute), MemoryBytes: 1 << 30, CPUs: 1.5, PidsLimit: 256,
		TmpBytes: 256 << 20, DiskBytes: 2 << 30, DiskUsedBytes: 3 << 20, Egress: true, EgressBytes: 5 << 20, EgressMax: 4 << 30,
		RunningJobs: []workspace.JobInfo{{ID: "j-1", Kind: "job", Argv: []string{"sleep", "9"}, State: "running"}}, JobsKnown: true,
		Checkpoints: 2, Latest: &workspace.Checkpoint{ID: "c2", Message: "before refactor", Created: at}, CheckpointBytes: 1 << 20, CheckpointCap: 4 << 30,
		Ports: []workspace.PortInfo{{Port: 8000, URL: "http://127.0.0.1:40000/"}}}
	r := infoResult(st)
	if r.Container.Since == nil || r.Limits.DiskUsedBytes == nil || *r.Limits.DiskUsedBytes != 3<<20 || r.Limits.CommandTimeoutSeconds != defaultTimeout ||
		len(r.RunningJobs) != 1 || r.LatestCheckpoint == nil || r.LatestCheckpoint.ID != "c2" || len(r.Ports) != 1 {
		t.Errorf("result %+v", r)
	}
	text := r.Text()
	for _, want := range []string{"container wink-abc: running since 2026-11-25T12:00:00Z, image img:1, profile go, kept workspace proj",
		"memory 1 GiB, 1.5 CPUs, 256 processes, /tmp 256 MiB, disk 3.0 MiB used of 2.0 GiB, commands time out after 30 s, egress 5.0 MiB used of 4.0 GiB",
		"1 jobs running", "j-1", "2 checkpoints", "latest: c2", "before refactor", "open ports: 8000 at http://127.0.0.1:40000/"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}

	none := infoResult(workspace.State{Container: "wink-x", ContainerState: workspace.ContainerNotMade, DiskUsedBytes: -1, CommandTimeout: 5 * time.Minute})
	if none.Container.Since != nil || none.Limits.DiskUsedBytes != nil || none.Limits.CommandTimeoutSeconds != 300 || none.RunningJobs == nil || none.Ports == nil {
		t.Errorf("a workspace without a container: %+v", none)
	}
	if text := none.Text(); !strings.Contains(text, "container wink-x: not made") || !strings.Contains(text, "no network") || !strings.Contains(text, "open ports: none") {
		t.Errorf("text:\n%s", text)
	}
}

// The tool only reads: it asks the workspace for its state and nothing else.
func TestWorkspaceInfoOnlyReads(t *testing.T) {
	t.Parallel()
	f := &fakeState{state: workspace.State{Container: "wink-x", ContainerState: workspace.ContainerNotMade, DiskUsedBytes: -1}}
	tool, err := WorkspaceInfo(func(context.Context) (any, error) { return f, nil })
	if err != nil {
		t.Fatal(err)
	}
	var req mcp.CallToolRequest
	req.Params.Name = "workspace_info"
	res, err := tool.Handler(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if strings.Join(f.calls, ",") != "state" {
		t.Errorf("calls %v, want only state", f.calls)
	}
	if !*tool.Tool.Annotations.ReadOnlyHint {
		t.Error("not marked read-only")
	}
}

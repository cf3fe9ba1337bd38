package integration

import (
	"fmt"
	"testing"

	"github.com/wink-mcp/wink-mcp/tools"
)

// tryWorkspaceInfo asks workspace_info at each state of a workspace's life
// and checks what it says, and that asking never makes or starts a
// container. It returns how many states were tried and broken.
func tryWorkspaceInfo(t *testing.T) (tried, broken int) {
	p := start(t, startOptions{args: []string{"--lazy", "--egress", "example.invalid", "--egress-max-bytes", "8m", "--memory", "512m", "--disk-limit", "64m"}})
	info := func(what string, check func(r tools.WorkspaceInfoResult) string) tools.WorkspaceInfoResult {
		t.Helper()
		tried++
		var r tools.WorkspaceInfoResult
		p.tool("workspace_info", map[string]any{}, &r)
		if why := check(r); why != "" {
			broken++
			t.Errorf("%s: %s\n%s", what, why, r.Text())
		}
		return r
	}
	info("before the first call", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.State != "not made" || r.Container.Since != nil:
			return "the container is " + r.Container.State
		case len(containersNamed(t, p.prefix)) > 0:
			return "asking made a container"
		case r.Limits.MemoryBytes != 512<<20 || r.Limits.DiskBytes != 64<<20 || r.Limits.EgressMaxBytes != 8<<20 || !r.Limits.Egress || r.Limits.CommandTimeoutSeconds != 30:
			return fmt.Sprintf("limits %+v", r.Limits)
		}
		return ""
	})
	p.run("sh", "-c", "head -c 3000000 /dev/zero > blob")
	job := p.shell(map[string]any{"command": []string{"sleep", "600"}, "background": true}).Job
	var cp tools.WorkspaceCheckpointResult
	p.tool("workspace_checkpoint", map[string]any{"message": "first"}, &cp)
	var port tools.WorkspacePortResult
	p.tool("workspace_port", map[string]any{"action": "open", "port": 8000}, &port)
	name := p.container()
	info("with a job, a checkpoint and a port", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.Name != name || r.Container.State != "running" || r.Container.Since == nil || r.Container.Image != testImage:
			return fmt.Sprintf("container %+v, want %s running", r.Container, name)
		case r.Limits.DiskUsedBytes == nil || *r.Limits.DiskUsedBytes < 3000000 || *r.Limits.DiskUsedBytes > 64<<20:
			return fmt.Sprintf("disk used %v, want at least the 3 MB written", r.Limits.DiskUsedBytes)
		case len(r.RunningJobs) != 1 || r.RunningJobs[0].ID != job:
			return fmt.Sprintf("running jobs %+v, want %s", r.RunningJobs, job)
		case r.Checkpoints != 1 || r.LatestCheckpoint == nil || r.LatestCheckpoint.Message != "first":
			return fmt.Sprintf("checkpoints %d, latest %+v", r.Checkpoints, r.LatestCheckpoint)
		case len(r.Ports) != 1 || r.Ports[0].Port != 8000 || port.Port == nil || r.Ports[0].URL != port.Port.URL:
			return fmt.Sprintf("ports %+v", r.Ports)
		case r.Created.After(*r.Container.Since) || r.LastUsed.Before(*r.Container.Since):
			return fmt.Sprintf("created %s, since %s, last used %s", r.Created, r.Container.Since, r.LastUsed)
		}
		return ""
	})
	if out, err := podman(t, "rm", "-f", "-t", "0", name); err != nil {
		t.Fatalf("podman rm: %v: %s", err, out)
	}
	info("its container removed behind its back", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.State != "gone":
			return "the container is " + r.Container.State
		case len(containersNamed(t, p.prefix)) > 0:
			return "asking made the container again"
		case r.Checkpoints != 1:
			return fmt.Sprintf("%d checkpoints", r.Checkpoints)
		}
		return ""
	})
	p.shell(map[string]any{"action": "stop"})
	info("after podman_shell action=stop", func(r tools.WorkspaceInfoResult) string {
		switch {
		case r.Container.State != "not made" || len(containersNamed(t, p.prefix)) > 0:
			return "the container is " + r.Container.State
		case len(r.RunningJobs) != 0:
			return fmt.Sprintf("running jobs %+v", r.RunningJobs)
		}
		return ""
	})
	return tried, broken
}

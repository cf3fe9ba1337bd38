package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// WorkspaceInfoParams are workspace_info's arguments: none.
type WorkspaceInfoParams struct{}

// ContainerView is the workspace's container as workspace_info shows it.
type ContainerView struct {
	Name  string     `json:"name" jsonschema_description:"The container's name in Podman."`
	State string     `json:"state" jsonschema:"enum=not made,enum=running,enum=stopped,enum=gone" jsonschema_description:"running; stopped or gone (the next call makes it again, files kept); not made (the first call that needs it makes it)."`
	Since *time.Time `json:"since,omitempty" jsonschema_description:"When this server last started it (UTC)."`
	Image string     `json:"image,omitempty" jsonschema_description:"The image of the last container made."`
}

// LimitsView are the limits of the workspace's containers and what it
// used of those that are spent.
type LimitsView struct {
	MemoryBytes           int64   `json:"memory_bytes" jsonschema_description:"Memory limit; a command past it is killed (out_of_memory says so)."`
	CPUs                  float64 `json:"cpus" jsonschema_description:"CPU limit in cores."`
	Pids                  int64   `json:"pids" jsonschema_description:"Most processes at once."`
	TmpBytes              int64   `json:"tmp_bytes" jsonschema_description:"Size of the /tmp tmpfs."`
	DiskBytes             int64   `json:"disk_bytes" jsonschema_description:"Size of /workspace's own filesystem (0: no limit)."`
	DiskUsedBytes         *int64  `json:"disk_used_bytes,omitempty" jsonschema_description:"What /workspace's filesystem holds now, when it has one of its own."`
	CommandTimeoutSeconds int     `json:"command_timeout_seconds" jsonschema_description:"The timeout of a podman_shell command that gives none."`
	Egress                bool    `json:"egress" jsonschema_description:"Whether the workspace reaches any network (through its egress proxy)."`
	EgressBytes           int64   `json:"egress_bytes" jsonschema_description:"What the egress proxy carried so far, both ways."`
	EgressMaxBytes        int64   `json:"egress_max_bytes" jsonschema_description:"The most it may carry."`
	Unenforced            string  `json:"unenforced,omitempty" jsonschema_description:"Limits the host cannot enforce, which the container runs without."`
}

// WorkspaceInfoResult is workspace_info's result.
type WorkspaceInfoResult struct {
	Container        ContainerView   `json:"container" jsonschema_description:"The container."`
	Profile          string          `json:"profile,omitempty" jsonschema_description:"The workspace's profile."`
	Kept             string          `json:"kept_workspace,omitempty" jsonschema_description:"The kept workspace it is, which outlives the session."`
	Created          time.Time       `json:"created" jsonschema_description:"When the session got this workspace (UTC)."`
	LastUsed         time.Time       `json:"last_used" jsonschema_description:"When a call before this one last ran (UTC)."`
	Limits           LimitsView      `json:"limits" jsonschema_description:"Limits, and what is used of them."`
	RunningJobs      []JobView       `json:"running_jobs" jsonschema_description:"Background jobs running now (empty when no container runs)."`
	Checkpoints      int             `json:"checkpoints" jsonschema_description:"How many checkpoints it has."`
	LatestCheckpoint *CheckpointView `json:"latest_checkpoint,omitempty" jsonschema_description:"The newest checkpoint."`
	CheckpointBytes  int64           `json:"checkpoint_bytes" jsonschema_description:"What the checkpoints take, content they share counted once."`
	CheckpointCap    int64           `json:"checkpoint_cap_bytes" jsonschema_description:"The most they may take (0: no limit)."`
	Ports            []PortView      `json:"ports" jsonschema_description:"Container ports shown on the user's machine."`
}

// Text renders the state in a few lines.
func (r WorkspaceInfoResult) Text() string {
	var b strings.Builder
	c := r.Container
	fmt.Fprintf(&b, "container %s: %s", c.Name, c.State)
	if c.Since != nil {
		fmt.Fprintf(&b, " since %s", c.Since.Format(time.RFC3339))
	}
	if c.Image != "" {
		fmt.Fprintf(&b, ", image %s", c.Image)
	}
	if r.Profile != "" {
		fmt.Fprintf(&b, ", profile %s", r.Profile)
	}
	if r.Kept != "" {
		fmt.Fprintf(&b, ", kept workspace %s", r.Kept)
	}
	fmt.Fprintf(&b, "\ncreated %s, last used %s", r.Created.Format(time.RFC3339), r.LastUsed.Format(time.RFC3339))
	l := r.Limits
	disk := "no disk limit"
	if l.DiskBytes > 0 {
		disk = "disk " + checkpoints.FormatBytes(l.DiskBytes)
		if l.DiskUsedBytes != nil {
			disk = fmt.Sprintf("disk %s used of %s", checkpoints.FormatBytes(*l.DiskUsedBytes), checkpoints.FormatBytes(l.DiskBytes))
		}
	}
	fmt.Fprintf(&b, "\nlimits: memory %s, %g CPUs, %d processes, /tmp %s, %s, commands time out after %d s",
		wholeBytes(l.MemoryBytes), l.CPUs, l.Pids, wholeBytes(l.TmpBytes), disk, l.CommandTimeoutSeconds)
	if l.Egress {
		fmt.Fprintf(&b, ", egress %s used of %s", checkpoints.FormatBytes(l.EgressBytes), checkpoints.FormatBytes(l.EgressMaxBytes))
	} else {
		b.WriteString(", no network")
	}
	if l.Unenforced != "" {
		fmt.Fprintf(&b, " (not enforced here: %s)", l.Unenforced)
	}
	fmt.Fprintf(&b, "\n%d jobs running", len(r.RunningJobs))
	for _, j := range r.RunningJobs {
		b.WriteString("\n  " + j.line())
	}
	fmt.Fprintf(&b, "\n%d checkpoints, %s", r.Checkpoints, checkpoints.FormatBytes(r.CheckpointBytes))
	if r.CheckpointCap > 0 {
		fmt.Fprintf(&b, " of %s", checkpoints.FormatBytes(r.CheckpointCap))
	}
	if r.LatestCheckpoint != nil {
		b.WriteString("; latest: " + r.LatestCheckpoint.line())
	}
	ports := make([]string, 0, len(r.Ports))
	for _, p := range r.Ports {
		ports = append(ports, fmt.Sprintf("%d at %s", p.Port, p.URL))
	}
	if len(ports) == 0 {
		ports = append(ports, "none")
	}
	b.WriteString("\nopen ports: " + strings.Join(ports, ", "))
	return b.String()
}

// StateReporter is what workspace_info takes of a session's workspace.
type StateReporter interface {
	// State reports the workspace (container, limits and use, jobs,
	// checkpoints, ports) without making or starting a container.
	State(ctx context.Context) (workspace.State, error)
}

// WorkspaceInfo returns the workspace_info tool.
func WorkspaceInfo(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[StateReporter, WorkspaceInfoParams, WorkspaceInfoResult]{
		name:  "workspace_info",
		title: "Describe the workspace",
		description: "Describe this workspace without changing it (no container is made or started to answer): its container " +
			"(name, state, since when, image), profile, kept workspace name, when it was made and last used, its limits and " +
			"what is used of them (memory, CPUs, processes, /tmp, disk, command timeout, egress bytes), running jobs, " +
			"checkpoints and the latest one, and open ports.",
		annotations: annotate(true, false, true),
		handle: func(ctx context.Context, ws StateReporter, _ WorkspaceInfoParams) (WorkspaceInfoResult, error) {
			st, err := ws.State(ctx)
			if err != nil {
				return WorkspaceInfoResult{}, err
			}
			return infoResult(st), nil
		},
	})
}

// infoResult is st as the tool shows it.
func infoResult(st workspace.State) WorkspaceInfoResult {
	timeout := st.CommandTimeout
	if timeout == 0 {
		timeout = defaultTimeout * time.Second // podman_shell's own
	}
	r := WorkspaceInfoResult{
		Container: ContainerView{Name: st.Container, State: st.ContainerState, Image: st.Image},
		Profile:   st.Profile, Kept: st.Kept, Created: st.Created.UTC(), LastUsed: st.LastUsed.UTC(),
		Limits: LimitsView{MemoryBytes: st.MemoryBytes, CPUs: st.CPUs, Pids: st.PidsLimit, TmpBytes: st.TmpBytes, DiskBytes: st.DiskBytes,
			CommandTimeoutSeconds: int(timeout / time.Second), Egress: st.Egress, EgressBytes: st.EgressBytes, EgressMaxBytes: st.EgressMax,
			Unenforced: st.Unenforced},
		RunningJobs: []JobView{}, Checkpoints: st.Checkpoints, CheckpointBytes: st.CheckpointBytes, CheckpointCap: st.CheckpointCap,
		Ports: []PortView{},
	}
	if !st.Since.IsZero() {
		since := st.Since.UTC()
		r.Container.Since = &since
	}
	if st.DiskUsedBytes >= 0 {
		used := st.DiskUsedBytes
		r.Limits.DiskUsedBytes = &used
	}
	for _, j := range st.RunningJobs {
		r.RunningJobs = append(r.RunningJobs, *jobView(j))
	}
	if st.Latest != nil {
		v := checkpointView(*st.Latest)
		r.LatestCheckpoint = &v
	}
	for _, p := range st.Ports {
		r.Ports = append(r.Ports, PortView{Port: p.Port, URL: p.URL})
	}
	return r
}

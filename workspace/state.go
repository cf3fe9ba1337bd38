package workspace

import (
	"context"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// Container states State reports.
const (
	ContainerNotMade = "not made"
	ContainerRunning = "running"
	ContainerStopped = "stopped"
	ContainerGone    = "gone"
)

// State is what a workspace is and holds, as workspace_info reports it.
type State struct {
	// Container is the container's name, ContainerState one of the
	// Container* constants (as the engine answers now) and Since when
	// this server last started it (zero if it never did).
	Container, ContainerState string
	Since                     time.Time
	// Image is the image of the last container made ("" before one is);
	// Profile and Kept name the profile and the kept workspace, "" for none.
	Image, Profile, Kept string
	// Unenforced names the limits the host cannot enforce (see ContainerInfo).
	Unenforced string
	// Created is when the session's workspace was opened, LastUsed when
	// a call last started or ended before this one.
	Created, LastUsed time.Time
	// MemoryBytes, CPUs, PidsLimit, TmpBytes and DiskBytes are the
	// limits of its containers (DiskBytes 0: none); CommandTimeout is the
	// timeout of a command that gives none (0: the tool's default).
	MemoryBytes    int64
	CPUs           float64
	PidsLimit      int64
	TmpBytes       int64
	DiskBytes      int64
	CommandTimeout time.Duration
	// DiskUsedBytes is what its disk holds, -1 when it has no disk of its
	// own to measure.
	DiskUsedBytes int64
	// Egress says the workspace has a network at all; EgressBytes is what
	// its proxy carried so far, of EgressMaxBytes.
	Egress                 bool
	EgressBytes, EgressMax int64
	// RunningJobs are the jobs running in its container; JobsKnown is
	// false when no channel is open to ask (no container runs).
	RunningJobs []JobInfo
	JobsKnown   bool
	// Checkpoints counts them; Latest is the newest, nil for none;
	// CheckpointBytes is what the store holds, of CheckpointCap.
	Checkpoints                    int
	Latest                         *Checkpoint
	CheckpointBytes, CheckpointCap int64
	// Ports are the container ports shown on this machine.
	Ports []PortInfo
}

// jobListTimeout bounds asking a running container for its jobs.
const jobListTimeout = 5 * time.Second

// State reports the workspace without changing it: no container is made
// or started to answer.
func (s *Session) State(ctx context.Context) (State, error) {
	lastUsed := time.Unix(0, s.lastUsed.Load())
	defer s.enter()()
	s.mu.Lock()
	info := s.infoLocked()
	l := profileLimits(s.m.cfg.Limits, s.profile)
	st := State{Container: info.Name, ContainerState: ContainerNotMade, Since: s.startedAt, Image: info.Image, Profile: info.Profile,
		Kept: info.Kept, Unenforced: info.Unenforced, Created: s.opened, LastUsed: lastUsed,
		MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, PidsLimit: l.PidsLimit, TmpBytes: l.TmpBytes, DiskBytes: l.DiskBytes,
		CommandTimeout: info.CommandTimeout, DiskUsedBytes: -1, Egress: s.m.cfg.EgressOn(), EgressMax: s.m.cfg.EgressMaxBytes}
	if s.disk {
		st.DiskUsedBytes = disk.Used(s.dir)
	}
	if s.proxy != nil {
		st.EgressBytes = s.proxy.Transferred()
	}
	if s.created {
		exists, running, err := s.m.eng.Running(ctx, s.name)
		switch {
		case err != nil:
			s.mu.Unlock()
			return st, err
		case running:
			st.ContainerState = ContainerRunning
		case exists:
			st.ContainerState = ContainerStopped
		default:
			st.ContainerState = ContainerGone
		}
	}
	if st.ContainerState == ContainerRunning && s.client != nil {
		st.RunningJobs, st.JobsKnown = []JobInfo{}, true
		if list, ok := s.jobs.List(ctx, s.client, jobListTimeout); ok {
			for _, j := range list.Jobs {
				if j.State == wire.JobRunning {
					st.RunningJobs = append(st.RunningJobs, j)
				}
			}
		}
	}
	s.mu.Unlock()
	st.Ports = s.ports.Ports()
	if s.checkpoints.HasCheckpoints() {
		store, err := s.checkpoints.Store()
		if err != nil {
			return st, err
		}
		list, err := store.List()
		if err != nil {
			return st, err
		}
		st.Checkpoints, st.CheckpointBytes, st.CheckpointCap = len(list), store.Bytes(), store.Cap()
		if len(list) > 0 {
			st.Latest = &list[len(list)-1]
		}
	} else {
		st.CheckpointCap = s.m.cfg.CheckpointBytes
	}
	return st, nil
}

package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/display"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/wspath"
)

// A restore must know that its result fits the workspace's disk before it
// changes a file: one that fills the disk half way would leave a mix of
// two states. The plan's cost is counted in whole blocks, as the disk
// gives them, and checked against the free space and inodes the agent
// reports. Nothing is kept to spare: a state that filled the disk when it
// was saved must fit again, and a restore the count misjudges (the blocks
// a large file's extents or a growing directory take are not counted)
// still fails whole: it is put back from its automatic checkpoint.

// planSpace is what a plan takes from the disk beyond what it holds now.
type planSpace struct {
	// Peak is the most it holds at any step, Final what it holds at the
	// end (negative when it frees more than it writes), in whole blocks.
	Peak, Final int64
	// Entries is the number of entries it adds (negative when it removes more).
	Entries int64
}

// space counts what p takes from a disk of block-sized blocks, with the
// workspace as current lists it: removals come first in a plan, then
// each write makes its upload beside the file it replaces and renames it
// over, freeing the old one.
func (p restorePlan) space(current []wire.ScanEntry, block int64) planSpace {
	blocks := func(n int64) int64 { return (n + block - 1) / block * block }
	removed := map[string]bool{}
	for _, st := range p.steps {
		if st.Step == wire.StepRemove {
			removed[st.Path.String()] = true
		}
	}
	var sp planSpace
	for _, c := range current {
		path := c.Path.String()
		if !removed[path] && !underRemoved(path, removed) {
			continue
		}
		sp.Entries--
		switch c.Kind {
		case wire.KindFile:
			sp.Final -= blocks(c.Size)
		case wire.KindDirectory:
			sp.Final -= block
		}
	}
	for _, st := range p.steps {
		switch {
		case st.Step == wire.StepMkdir:
			sp.Final += block
			sp.Entries++
		case st.Step == wire.StepSymlink:
			if st.Target != nil && len(st.Target.String()) >= 60 { // shorter targets live in the inode
				sp.Final += block
			}
			sp.Entries++
		case st.Step == wire.StepFifo:
			sp.Entries++
		case st.blob != "":
			sp.Final += blocks(st.size)
			sp.Peak = max(sp.Peak, sp.Final)
			if st.replaces >= 0 {
				sp.Final -= blocks(st.replaces)
			} else {
				sp.Entries++
			}
		}
		sp.Peak = max(sp.Peak, sp.Final)
	}
	return sp
}

// fits reports whether the plan fits the free space and inodes of d.
func (sp planSpace) fits(d wire.DiskSpace) bool {
	return sp.shortOf(d) <= 0 && !sp.shortOfFiles(d)
}

// shortOf is how many bytes the plan needs beyond the free space of d.
func (sp planSpace) shortOf(d wire.DiskSpace) int64 {
	return sp.Peak - d.FreeBytes
}

// shortOfFiles reports whether the plan needs more inodes than d has (an
// upload takes one more while it is written).
func (sp planSpace) shortOfFiles(d wire.DiskSpace) bool {
	return d.TotalFiles > 0 && sp.Entries+1 > d.FreeFiles
}

// noRoomError says that a restore does not fit the workspace's disk, and
// what takes the space.
type noRoomError struct {
	need  planSpace
	disk  wire.DiskSpace
	files int64 // the bytes of the files in /workspace now
}

func (e *noRoomError) Error() string {
	if e.need.shortOfFiles(e.disk) {
		return fmt.Sprintf("the checkpoint has %d more files and directories than the %d the workspace's disk can still make; %s",
			e.need.Entries, e.disk.FreeFiles, DiskAdvice(e.disk, e.files))
	}
	return fmt.Sprintf("the checkpoint needs %s more of the workspace's disk than it has; %s",
		checkpoints.FormatBytes(e.need.shortOf(e.disk)), DiskAdvice(e.disk, e.files))
}

// DiskAdvice says how full the workspace's disk is, what takes the space
// (or the inodes, when none is free) and which calls free it. files, when
// not negative, is what the files in /workspace hold.
func DiskAdvice(d wire.DiskSpace, files int64) string {
	var b strings.Builder
	if d.NoFreeFiles() {
		fmt.Fprintf(&b, "the workspace's disk of %s can make no more files: all its %d inodes are in use (%s of space free)",
			checkpoints.FormatBytes(d.TotalBytes), d.TotalFiles, checkpoints.FormatBytes(d.FreeBytes))
	} else {
		fmt.Fprintf(&b, "the workspace's disk of %s has %s free", checkpoints.FormatBytes(d.TotalBytes), checkpoints.FormatBytes(d.FreeBytes))
	}
	if files >= 0 {
		fmt.Fprintf(&b, "; the files in /workspace hold %s", checkpoints.FormatBytes(files))
	}
	b.WriteString(TopNote(d, "in /workspace"))
	rm := "rm on files you no longer need (workspace_checkpoint saves them first)"
	if len(d.Top) > 0 {
		rm = fmt.Sprintf("rm on what you no longer need (such as rm path=%s, a directory goes whole; workspace_checkpoint saves it first)",
			display.Text(strings.TrimPrefix(d.Top[0].Path, wspath.Root+"/")))
	}
	switch {
	case d.NoFreeFiles():
		fmt.Fprintf(&b, ". Free inodes with %s", rm)
	case d.KeptBytes > 0:
		var jobs []string
		for _, o := range d.Outputs {
			jobs = append(jobs, fmt.Sprintf("job %s: %s", o.ID, checkpoints.FormatBytes(o.Bytes)))
		}
		fmt.Fprintf(&b, "; the kept output of finished jobs takes %s (%s). Free space with job action=forget id=%s (it drops a finished job's kept output), or %s",
			checkpoints.FormatBytes(d.KeptBytes), strings.Join(jobs, ", "), d.Outputs[0].ID, rm)
	default:
		fmt.Fprintf(&b, ". Free space with %s", rm)
	}
	return b.String()
}

// TopNote names the entries of a full filesystem that take the most of
// what is short (see wire.DiskSpace.Top), where says where they are;
// "" when the agent named none.
func TopNote(d wire.DiskSpace, where string) string {
	if len(d.Top) == 0 {
		return ""
	}
	var uses []string
	for _, u := range d.Top {
		name := display.Text(strings.TrimPrefix(u.Path, wspath.Root+"/"))
		if d.NoFreeFiles() {
			uses = append(uses, fmt.Sprintf("%s (%d files and directories)", name, u.Entries))
		} else {
			uses = append(uses, fmt.Sprintf("%s (%s)", name, checkpoints.FormatBytes(u.Bytes)))
		}
	}
	what := "the largest entries"
	if d.NoFreeFiles() {
		what = "the entries with the most files"
	}
	if d.TopPartial {
		what += " (counted in part)"
	}
	return fmt.Sprintf("; %s %s: %s", what, where, strings.Join(uses, ", "))
}

// diskSpace asks the agent how full the workspace's disk is.
func (r *Room) diskSpace(ctx context.Context, client *wire.Client) (wire.DiskSpace, error) {
	var d wire.DiskSpace
	if err := client.Call(ctx, wire.OpDiskSpace, struct{}{}, &d); err != nil {
		return d, fmt.Errorf("reading the free space of /workspace: %w", err)
	}
	if d.BlockSize <= 0 {
		d.BlockSize = 4096
	}
	return d, nil
}

// isNoSpace reports whether err is a disk found full.
func isNoSpace(err error) bool {
	var room *noRoomError
	return err != nil && (errors.As(err, &room) || strings.Contains(strings.ToLower(err.Error()), "no space left"))
}

// WithDiskAdvice adds to a call's disk-full error what takes the space
// and how to free it, when the agent can say.
func (r *Room) WithDiskAdvice(ctx context.Context, err error) error {
	var room *noRoomError
	if !isNoSpace(err) || errors.As(err, &room) {
		return err
	}
	client := r.deps.Client()
	if client == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	d, derr := r.diskSpace(ctx, client)
	if derr != nil {
		return err
	}
	return fmt.Errorf("%w; %s", err, DiskAdvice(d, -1))
}

// filesBytes sums the sizes of the files in a scan.
func filesBytes(entries []wire.ScanEntry) int64 {
	var n int64
	for _, e := range entries {
		if e.Kind == wire.KindFile {
			n += e.Size
		}
	}
	return n
}

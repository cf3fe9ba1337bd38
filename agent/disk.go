//go:build linux

package agent

import (
	"slices"

	"github.com/wink-mcp/wink-mcp/wire"
)

// maxReportedOutputs bounds the kept outputs OpDiskSpace names.
const maxReportedOutputs = 5

// space answers OpDiskSpace: the free space of /workspace's filesystem,
// and the kept outputs of finished jobs, which take space on it that no
// file in /workspace shows; when it is full, the entries of /workspace
// that take the most of what is short.
func (d *disks) space() (*wire.DiskSpace, *wire.Error) {
	res, err := statDisk(d.workspace)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "reading the free space of /workspace: %v", err)
	}
	for _, kept := range d.keptOutputs() {
		res.Outputs = append(res.Outputs, kept)
		res.KeptBytes += kept.Bytes
	}
	slices.SortFunc(res.Outputs, func(x, y wire.KeptOutput) int { return int(y.Bytes - x.Bytes) })
	res.Outputs = res.Outputs[:min(len(res.Outputs), maxReportedOutputs)]
	if res.Full() {
		res.Top, res.TopPartial = topUses(d.workspace, res.NoFreeFiles())
	}
	return &res, nil
}

// keptOutputs lists the kept outputs of the finished jobs that take space
// on /workspace's disk.
func (js *jobs) keptOutputs() []wire.KeptOutput {
	var kept []wire.KeptOutput
	for _, j := range js.list() {
		if j.running() {
			continue
		}
		out, errs := j.out.onWorkspaceDisk(), j.errs.onWorkspaceDisk()
		if out+errs > 0 {
			kept = append(kept, wire.KeptOutput{ID: j.id, Bytes: out + errs})
		}
	}
	return kept
}

// forgetJob answers OpJobForget: a finished job's record and kept output
// go, and with them the disk space the output took.
func (a *Agent) forgetJob(args wire.JobArgs) (*wire.JobInfo, *wire.Error) {
	j, werr := a.jobs.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	if j.running() {
		return nil, wire.Errorf(wire.CodeInvalid, "job %s is still running: stop it first (job action=signal), then forget it", args.ID)
	}
	in := j.info()
	a.jobs.forget(j)
	return &in, nil
}

// forget drops a finished job's record and closes its output files.
func (js *jobs) forget(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j.out.close()
	j.errs.close()
	delete(js.all, j.id)
	js.order = slices.DeleteFunc(js.order, func(id string) bool { return id == j.id })
}

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

package workspace

import (
	"log/slog"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace/egressrecord"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// egressRecorder keeps a kept workspace's egress count in its record
// (package egressrecord).
type egressRecorder = egressrecord.Recorder

// recordEgress starts recording the egress count mt keeps for k.
func (k *keptWorkspace) recordEgress(mt *egress.Meter, log *slog.Logger) {
	k.egress = egressrecord.Start(k.root, mt, func(used int64) error { return writeEgressBytes(k.root, used) }, log)
}

// stopRecordingEgress stops the recording, before the caller writes the
// record itself (release, a handoff's reserve); it is safe to call twice.
func (k *keptWorkspace) stopRecordingEgress() {
	if r := k.egress; r != nil {
		r.Close()
	}
}

// writeEgressBytes raises the record's EgressBytes of the kept workspace at
// root to used.
func writeEgressBytes(root string, used int64) error {
	rec, err := keep.ReadRecord(root)
	if err != nil {
		return err
	}
	if rec.EgressBytes >= used {
		return nil
	}
	rec.EgressBytes = used
	return writeJSON(filepath.Join(root, recordFile), rec)
}

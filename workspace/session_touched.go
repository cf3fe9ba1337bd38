package workspace

import "github.com/wink-mcp/wink-mcp/workspace/touched"

// Who changed a file, in TouchedFile.ChangedBy (package touched keeps the
// record).
const (
	// ByTool is a change of the file tools or of evaluate_python's writes.
	ByTool = touched.ByTool
	// ByCommand is a change a process made: a command, a job, the code
	// evaluate_python ran.
	ByCommand = touched.ByCommand
)

// MaxSnapshotFiles bounds the entries of a snapshot: past it, a change a
// command makes to a path not yet listed is counted in the entry of its
// top-level directory, or, when that is not listed either, as unlisted.
const MaxSnapshotFiles = touched.MaxSnapshotFiles

// TouchedFile is one entry of a session's snapshot: a file its tools or
// its commands wrote, edited or removed. Version counts the writes.
type TouchedFile = touched.TouchedFile

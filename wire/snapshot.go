package wire

import "unicode/utf8"

// Checkpoint operations: the server saves a workspace by scanning it and
// reading the files that changed since its last checkpoint, and brings it
// back by sending the steps that make it match a checkpoint. Paths are
// relative to the workspace and are not normalised by the path rules: a
// command may have made any name, and a checkpoint keeps it exactly.
const (
	// OpScan lists the workspace's entries in walk order, a page at a time.
	OpScan = "scan"
	// OpReadFiles returns parts of files, many small files an answer.
	OpReadFiles = "read_files"
	// OpApply changes the workspace, one step after another.
	OpApply = "apply"
	// OpWaitCommands waits until no command (exec or python) runs in the
	// container, as a restore must once it has cancelled them: a
	// cancelled call returns at once, its process tree dies in the grace.
	OpWaitCommands = "wait_commands"
)

// Limits of the checkpoint operations.
const (
	// MaxScanEntries bounds the entries one checkpoint holds (the server
	// keeps them all in memory while it saves or restores).
	MaxScanEntries = 250_000
	// ScanPageEntries bounds the entries of one OpScan answer.
	ScanPageEntries = 20_000
	// ScanPageBytes bounds the names one OpScan answer carries, so that a
	// page of long paths still fits in a frame.
	ScanPageBytes = 4 << 20
	// MaxChunkBytes bounds the file bytes one OpReadFiles answer or one
	// OpApply request carries.
	MaxChunkBytes = 4 << 20
)

// Kinds of scanned entries, besides KindFile, KindDirectory and KindSymlink.
const (
	KindFifo   = "fifo"
	KindSocket = "socket"
	KindDevice = "device"
)

// Name is a path or symlink target carried exactly: as a string when it is
// UTF-8 (JSON escapes every control byte), else as its bytes.
type Name struct {
	Text  string `json:"p,omitempty"`
	Bytes []byte `json:"pb,omitempty"`
}

// NameOf carries s exactly.
func NameOf(s string) Name {
	if utf8.ValidString(s) {
		return Name{Text: s}
	}
	return Name{Bytes: []byte(s)}
}

// String is the name's bytes.
func (n Name) String() string {
	if n.Bytes != nil {
		return string(n.Bytes)
	}
	return n.Text
}

// ScanArgs are the arguments of OpScan.
type ScanArgs struct {
	// Skip are workspace paths whose entries and subtrees are left out
	// (the read-only mounts, which no call can change).
	Skip []string `json:"skip,omitempty"`
	// After resumes a scan after this path, in walk order; empty starts it.
	After Name `json:"after"`
	// Limit bounds the entries of the answer, at most ScanPageEntries.
	Limit int `json:"limit"`
}

// ScanEntry is one entry of the workspace, as lstat sees it.
type ScanEntry struct {
	Path Name   `json:"path"`
	Kind string `json:"k"`
	// Mode holds the permission bits with setuid, setgid and sticky (07777).
	Mode  uint32 `json:"m"`
	Size  int64  `json:"s,omitempty"`
	Mtime int64  `json:"mt,omitempty"`
	Ctime int64  `json:"ct,omitempty"`
	Ino   uint64 `json:"i,omitempty"`
	// Target is a symlink's target.
	Target *Name `json:"t,omitempty"`
}

// ScanResult answers OpScan. Entries come in walk order: a directory,
// then what it holds, names sorted bytewise.
type ScanResult struct {
	Entries []ScanEntry `json:"entries"`
	// More says the page is full; ask again with After set to its last path.
	More bool `json:"more"`
	// StartedUnixNanos is when the walk began, by the container's clock,
	// which is the host's: a file changed within a clock tick of it may
	// look unchanged to a later scan, so its content is not trusted.
	StartedUnixNanos int64 `json:"started_ns"`
}

// FileRange names bytes of a file to read.
type FileRange struct {
	Path   Name  `json:"path"`
	Offset int64 `json:"offset"`
	Limit  int   `json:"limit"`
}

// ReadFilesArgs are the arguments of OpReadFiles; the limits sum to at most
// MaxChunkBytes.
type ReadFilesArgs struct {
	Files []FileRange `json:"files"`
}

// FileData is one range read, with the file's state just before it was
// read, so the reader knows which state the bytes belong to.
type FileData struct {
	Data  []byte `json:"data"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mt"`
	Ctime int64  `json:"ct"`
	Ino   uint64 `json:"i"`
	// ReadUnixNanos is when it was read, by the container's clock.
	ReadUnixNanos int64 `json:"read_ns"`
	// Changed says the file changed while it was read: the bytes may mix
	// two states.
	Changed bool `json:"changed,omitempty"`
	// Error says why the range could not be read ("" when it was).
	Error string `json:"error,omitempty"`
}

// ReadFilesResult answers OpReadFiles, one FileData per range, in order.
type ReadFilesResult struct {
	Files []FileData `json:"files"`
}

// Steps of OpApply.
const (
	// StepRemove removes whatever is at the path, a whole tree for a
	// directory, never following a symlink; nothing there is not an error.
	StepRemove = "remove"
	// StepMkdir makes a directory (an existing one is kept) with Mode.
	StepMkdir = "mkdir"
	// StepChmod sets Mode on a directory or file.
	StepChmod = "chmod"
	// StepWrite writes Data at Offset of an upload named Upload, beside
	// the path; with Final the upload gets Mode and replaces the path.
	StepWrite = "write"
	// StepSymlink makes a symlink to Target.
	StepSymlink = "symlink"
	// StepFifo makes a fifo with Mode.
	StepFifo = "fifo"
)

// ApplyStep is one change OpApply makes.
type ApplyStep struct {
	Step   string `json:"step"`
	Path   Name   `json:"path"`
	Mode   uint32 `json:"mode,omitempty"`
	Data   []byte `json:"data,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Upload string `json:"upload,omitempty"`
	Final  bool   `json:"final,omitempty"`
	Target *Name  `json:"target,omitempty"`
}

// ApplyArgs are the arguments of OpApply: steps made in order, until one fails.
type ApplyArgs struct {
	Steps []ApplyStep `json:"steps"`
}

// ApplyResult answers OpApply.
type ApplyResult struct {
	// Done counts the steps made.
	Done int `json:"done"`
}

// WaitCommandsArgs are the arguments of OpWaitCommands.
type WaitCommandsArgs struct {
	TimeoutMillis int64 `json:"timeout_ms"`
}

// WaitCommandsResult answers OpWaitCommands.
type WaitCommandsResult struct {
	// Running counts the commands still running when the wait ended.
	Running int64 `json:"running"`
}

package wire

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// File operations. Every path in their arguments is relative to the
// workspace and already normalised by the server ("" is the root); the agent
// resolves it through os.Root, so no path, symlink included, leads outside.
const (
	OpList   = "ls"
	OpRead   = "read"
	OpWrite  = "write"
	OpEdit   = "edit"
	OpGlob   = "glob"
	OpGrep   = "grep"
	OpRemove = "rm"
	// OpReadBytes reads bytes of any file, from an offset.
	OpReadBytes = "read_bytes"
	OpPython    = "python"
)

// Limits the agent enforces, shared with the tools that describe them.
const (
	// MaxFileChars bounds what write_file, edit_file and evaluate_python write.
	MaxFileChars = 48_000
	// MaxBinaryBytes bounds one binary write and one binary read.
	MaxBinaryBytes = 2 << 20
	// MaxResults bounds the entries of ls and the matches of glob and grep.
	MaxResults = 2_000
	// MaxReadLines bounds the lines one read_file returns.
	MaxReadLines = 2_000
	// MaxLineChars is where read_file (and workspace_diff) cut a long line.
	MaxLineChars = 2_000
	// MaxGrepLineChars is where grep cuts a matching line.
	MaxGrepLineChars = 500
	// MaxFileBytes is the largest file read_file, edit_file and grep load.
	MaxFileBytes = 16 << 20
	// MaxWalkEntries bounds the entries glob and grep visit in one call.
	MaxWalkEntries = 200_000
)

// Entry kinds in ListResult.
const (
	KindFile      = "file"
	KindDirectory = "directory"
	KindSymlink   = "symlink"
	KindOther     = "other"
)

// PathArgs are the arguments of OpList and OpRemove.
type PathArgs struct {
	Path string `json:"path"`
}

// Entry is one directory entry.
type Entry struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Kind       string    `json:"kind"`
	SizeBytes  int64     `json:"size_bytes"`
	Modified   time.Time `json:"modified"`
	LinkTarget string    `json:"link_target,omitempty"`
}

// ListResult answers OpList. Entries are sorted, directories first.
type ListResult struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Total     int     `json:"total"`
	Truncated bool    `json:"truncated"`
}

// ReadArgs are the arguments of OpRead.
type ReadArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
	// Whole returns the whole file as it is, ignoring Offset and Limit and
	// cutting no line.
	Whole bool `json:"whole,omitempty"`
}

// ReadResult answers OpRead. Content holds the lines from Offset on, with
// their line endings; Limit is the number of lines it holds.
type ReadResult struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	Offset     int    `json:"offset"`
	Limit      int    `json:"limit"`
	TotalLines int    `json:"total_lines"`
	LinesCut   int    `json:"lines_cut"`
	Truncated  bool   `json:"truncated"`
}

// WriteArgs are the arguments of OpWrite. With Binary, Data is the
// content (at most MaxBinaryBytes) and Content is ignored.
type WriteArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Binary  bool   `json:"binary,omitempty"`
	Data    []byte `json:"data,omitempty"`
}

// ReadBytesArgs are the arguments of OpReadBytes.
type ReadBytesArgs struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Limit  int    `json:"limit"`
}

// ReadBytesResult answers OpReadBytes: Data holds the bytes from Offset.
type ReadBytesResult struct {
	Path      string `json:"path"`
	Data      []byte `json:"data"`
	Offset    int64  `json:"offset"`
	SizeBytes int64  `json:"size_bytes"`
}

// WriteResult answers OpWrite.
type WriteResult struct {
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
	Created   bool   `json:"created"`
	// Seq orders this change among all the workspace's tool changes.
	Seq int64 `json:"seq"`
}

// EditArgs are the arguments of OpEdit.
type EditArgs struct {
	Path       string `json:"path"`
	Old        string `json:"old"`
	New        string `json:"new"`
	ReplaceAll bool   `json:"replace_all"`
}

// EditResult answers OpEdit.
type EditResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	SizeBytes    int64  `json:"size_bytes"`
	// Seq is as in WriteResult.
	Seq int64 `json:"seq"`
}

// GlobArgs are the arguments of OpGlob.
type GlobArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// GlobMatch is one file glob found.
type GlobMatch struct {
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
}

// GlobResult answers OpGlob. Matches are sorted by path.
type GlobResult struct {
	Matches   []GlobMatch `json:"matches"`
	Truncated bool        `json:"truncated"`
	Note      string      `json:"note,omitempty"`
}

// GrepArgs are the arguments of OpGrep.
type GrepArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob,omitempty"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path       string `json:"path"`
	LineNumber int    `json:"line_number"`
	Line       string `json:"line"`
}

// GrepResult answers OpGrep. Matches are sorted by path, then line.
type GrepResult struct {
	Matches       []GrepMatch `json:"matches"`
	Truncated     bool        `json:"truncated"`
	FilesSearched int         `json:"files_searched"`
	FilesSkipped  int         `json:"files_skipped"`
	Note          string      `json:"note,omitempty"`
}

// RemoveResult answers OpRemove.
type RemoveResult struct {
	Path           string `json:"path"`
	RemovedEntries int    `json:"removed_entries"`
	// Seq is as in WriteResult.
	Seq int64 `json:"seq"`
}

// Write modes of PythonWrite.
const (
	WriteCreate    = "create"
	WriteOverwrite = "overwrite"
	WriteAppend    = "append"
)

// PythonWrite is a file evaluate_python writes after a successful run.
type PythonWrite struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Mode    string `json:"mode"`
}

// PythonArgs are the arguments of OpPython.
type PythonArgs struct {
	Code string `json:"code"`
	// Globals maps names to JSON-encoded values.
	Globals       map[string]string `json:"globals,omitempty"`
	Reads         []string          `json:"reads,omitempty"`
	Writes        []PythonWrite     `json:"writes,omitempty"`
	TimeoutMillis int64             `json:"timeout_ms"`
	// GraceMillis is as in ExecArgs.
	GraceMillis int64 `json:"grace_ms,omitempty"`
	// OutputChars bounds stdout, stderr and value_repr, in characters.
	OutputChars int `json:"output_chars"`
	// Progress asks for Progress frames while the code runs.
	Progress bool `json:"progress,omitempty"`
}

// FileRef names a file and its size.
type FileRef struct {
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
}

// WriteOutcome is what became of one PythonWrite.
type WriteOutcome struct {
	Path      string `json:"path"`
	Mode      string `json:"mode"`
	SizeBytes int64  `json:"size_bytes"`
	Applied   bool   `json:"applied"`
	Error     string `json:"error,omitempty"`
	// Seq is as in WriteResult, when Applied.
	Seq int64 `json:"seq,omitempty"`
}

// PythonResult answers OpPython.
type PythonResult struct {
	ValueRepr *string `json:"value_repr"`
	Stdout    string  `json:"stdout"`
	Stderr    string  `json:"stderr"`
	// Globals maps the JSON-serialisable variables after the run to their JSON encoding.
	Globals  map[string]string `json:"globals"`
	Reads    []FileRef         `json:"reads"`
	Writes   []WriteOutcome    `json:"writes"`
	Ok       bool              `json:"ok"`
	TimedOut bool              `json:"timed_out"`
	// Changes are the workspace changes the code made itself, outside
	// Writes, seen when it ended (see ExecResult.Changes).
	Changes []Change `json:"changes,omitempty"`
	// DiskFull is as in ExecResult.
	DiskFull *DiskFull `json:"disk_full,omitempty"`
}

// CutLine shortens a line (without its ending) longer than MaxLineChars
// characters, marking the cut, and says whether it did.
func CutLine(body string) (string, bool) {
	n := utf8.RuneCountInString(body)
	if n <= MaxLineChars {
		return body, false
	}
	return string([]rune(body)[:MaxLineChars]) + fmt.Sprintf("… [line cut at %d of %d characters]", MaxLineChars, n), true
}

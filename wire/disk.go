package wire

// OpDiskSpace reports the free space of the workspace's filesystem and
// what the agent itself keeps on it (the output of finished jobs), so the
// server can tell whether a restore fits before it changes anything, and
// say what to free when a write finds the disk full.
const OpDiskSpace = "disk_space"

// FullBelow is the free space under which a filesystem counts as full (a
// 32nd of a filesystem smaller than 32 MiB): a write that found it full
// leaves less than its own size free, and ext4 keeps a few hundred KiB
// back from a writer that is not root.
const FullBelow = 1 << 20

// DiskSpace answers OpDiskSpace: statfs of /workspace, as the workspace
// user may use it.
type DiskSpace struct {
	TotalBytes int64 `json:"total"`
	FreeBytes  int64 `json:"free"`
	FreeFiles  int64 `json:"free_files"`
	// TotalFiles is 0 on a filesystem without an inode limit.
	TotalFiles int64 `json:"total_files"`
	BlockSize  int64 `json:"block"`
	// Outputs are the kept outputs of finished jobs and truncated
	// commands, largest first; KeptBytes sums all of them.
	Outputs   []KeptOutput `json:"outputs,omitempty"`
	KeptBytes int64        `json:"kept"`
	// Top, when the filesystem is Full, are the entries of its directory
	// (/workspace, /tmp) that take the most of what is short: bytes, or
	// files and directories when no inode is free; most first.
	// TopPartial says the count stopped at its budget, before the end.
	Top        []SpaceUse `json:"top,omitempty"`
	TopPartial bool       `json:"top_partial,omitempty"`
}

// Full reports whether d has less than FullBelow free (a 32nd of a
// smaller filesystem), or no free inode.
func (d DiskSpace) Full() bool {
	return d.FreeBytes < min(FullBelow, d.TotalBytes/32) || d.NoFreeFiles()
}

// NoFreeFiles reports whether d has an inode limit and no inode left.
func (d DiskSpace) NoFreeFiles() bool {
	return d.TotalFiles > 0 && d.FreeFiles <= 0
}

// KeptOutput is a finished job's output the agent keeps on the disk.
type KeptOutput struct {
	ID    string `json:"id"`
	Bytes int64  `json:"bytes"`
}

// SpaceUse is what one entry of a directory takes, itself and all under
// it: its path (absolute, in the container), the bytes it takes on the
// disk and its number of files and directories.
type SpaceUse struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	Entries int64  `json:"entries"`
}

// DiskFull is set on a command's result or a job's JobInfo when the
// command ended with a filesystem it writes to Full: /workspace's, or
// the temporary directory's (/tmp) when that is another. WorkspaceFull
// and TmpFull say which was full when it ended; Workspace and Tmp are
// their state when the report was made (a job's, when it is asked for).
type DiskFull struct {
	Workspace     DiskSpace  `json:"workspace"`
	Tmp           *DiskSpace `json:"tmp,omitempty"`
	WorkspaceFull bool       `json:"workspace_full,omitempty"`
	TmpFull       bool       `json:"tmp_full,omitempty"`
}

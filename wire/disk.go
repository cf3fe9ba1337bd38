package wire

// OpDiskSpace reports the free space of the workspace's filesystem and
// what the agent itself keeps on it (the output of finished jobs), so the
// server can tell whether a restore fits before it changes anything, and
// say what to free when a write finds the disk full.
const OpDiskSpace = "disk_space"

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
}

// KeptOutput is a finished job's output the agent keeps on the disk.
type KeptOutput struct {
	ID    string `json:"id"`
	Bytes int64  `json:"bytes"`
}

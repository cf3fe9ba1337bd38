package wire

// Operations that report the changes commands make in the workspace.
const (
	// OpWatch starts watching the workspace (WatchArgs) and answers with
	// the watch's WatchStatus; asked again, it only answers.
	OpWatch = "watch"
	// OpChanges answers with the changes seen since the last answer
	// (ChangesArgs, ChangesResult), waiting for one if there is none yet.
	OpChanges = "changes"
)

// Watch states carried in WatchStatus.State.
const (
	// WatchFull means every directory of the workspace is watched.
	WatchFull = "full"
	// WatchPartial means some directories are not watched (WatchStatus.Unwatched):
	// a change under them is reported as a possible change of the directory
	// after each command.
	WatchPartial = "partial"
	// WatchOff means nothing is watched (WatchStatus.Reason says why): after
	// each command the whole workspace may have changed.
	WatchOff = "off"
)

// MaxChanges is the most changes one answer carries; the rest wait for
// the next one.
const MaxChanges = 2048

// WatchArgs are the arguments of OpWatch.
type WatchArgs struct {
	// MaxDirs is the most directories watched at once; past it a new
	// directory is left unwatched. Zero watches nothing.
	MaxDirs int `json:"max_dirs"`
	// InotifyShares, when positive, bounds what the workspace's commands
	// hold at once to 1/InotifyShares of the host's per-user inotify
	// instances and watches: past it the agent kills the greediest
	// process, and says so in its command's standard error.
	InotifyShares int `json:"inotify_shares,omitempty"`
}

// WatchStatus says how completely the workspace is watched.
type WatchStatus struct {
	State string `json:"state"`
	// Dirs counts the directories watched.
	Dirs int `json:"dirs"`
	// Unwatched lists the roots of the subtrees not watched (at most
	// MaxUnwatched; "" is the whole workspace).
	Unwatched []string `json:"unwatched,omitempty"`
	// Reason says why something is not watched.
	Reason string `json:"reason,omitempty"`
}

// MaxUnwatched is the most unwatched roots a WatchStatus lists; past it
// the whole workspace counts as unwatched.
const MaxUnwatched = 64

// ChangesArgs are the arguments of OpChanges.
type ChangesArgs struct {
	// WaitMillis is how long to wait for a change when none is pending;
	// zero answers at once.
	WaitMillis int64 `json:"wait_ms"`
}

// ChangesResult answers OpChanges.
type ChangesResult struct {
	Changes []Change `json:"changes"`
	// More says changes are still pending past MaxChanges.
	More  bool        `json:"more,omitempty"`
	Watch WatchStatus `json:"watch"`
}

// Change is one path a process other than the agent's own file tools
// changed, as it was when the change was reported.
type Change struct {
	// Path is relative to the workspace; "" is the workspace itself.
	Path string `json:"path"`
	// Removed says nothing is at Path any more.
	Removed bool `json:"removed,omitempty"`
	// Dir says Path is a directory, which may have replaced a file.
	Dir bool `json:"dir,omitempty"`
	// SizeBytes is the size of what is at Path.
	SizeBytes int64 `json:"size_bytes,omitempty"`
	// Folded, when positive, says Path is a directory standing for that
	// many changes under it, too many to list one by one.
	Folded int `json:"folded,omitempty"`
	// Unwatched says Path is a directory that is not watched: anything
	// under it may have changed.
	Unwatched bool `json:"unwatched,omitempty"`
	// Seq orders the change among the tools' changes (see WriteResult.Seq).
	Seq int64 `json:"seq"`
}

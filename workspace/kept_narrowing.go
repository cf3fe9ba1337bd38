package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// narrowingFile is, beside a kept workspace's record (in the checkpoint
// store of one its engine holds), what workspace_egress took away from
// its egress (egress.Narrowed): every later session on it, in this
// process or after a restart, by its name, an attach, a handoff or as a
// fork of it, starts without it. It only grows: nothing a model can call
// removes a pattern from it or unlocks it; a new workspace starts without.
const narrowingFile = "egress-narrowed.json"

// narrowingDir is where the kept workspace records what its sessions took
// away from their egress.
func (k *keptWorkspace) narrowingDir() string {
	if k.held != nil {
		return k.store
	}
	return k.root
}

// readNarrowed reads what the kept workspace whose records are in dir
// took away; nothing when it took nothing. A record it cannot read locks
// its egress (with the error): a damaged record never gives a host back.
func readNarrowed(dir string) (egress.Narrowed, error) {
	var n egress.Narrowed
	err := keep.ReadJSON(filepath.Join(dir, narrowingFile), &n)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return egress.Narrowed{}, nil
	case err != nil:
		return egress.Narrowed{Locked: true}, fmt.Errorf("reading %s: %w", filepath.Join(dir, narrowingFile), err)
	}
	return n, nil
}

// addNarrowed adds t to what the kept workspace whose records are in dir
// took away, and writes it atomically before it returns.
func addNarrowed(dir string, t egress.Narrowed) error {
	if !t.Locked && len(t.Dropped) == 0 {
		return nil
	}
	had, _ := readNarrowed(dir) // unreadable: locked, and replaced by a record saying so
	return writeJSON(filepath.Join(dir, narrowingFile), had.Union(t))
}

// narrowingRecord is where the session's workspace records what its
// sessions took away from their egress, and what to call the workspace
// in an error: its kept workspace's records, or its roaming workspace's
// shared checkpoint store (roaming_store.go); "" when its workspace ends
// with it, so the session's memory is the record.
func (e *egressPolicy) narrowingRecord() (dir, what string) {
	s := e.s
	switch {
	case s.kept != nil:
		return s.kept.narrowingDir(), fmt.Sprintf("kept workspace %q", s.kept.name)
	case s.roaming != nil && s.roaming.storeLock != nil:
		return s.storeDir, fmt.Sprintf("roaming workspace %s", s.roaming.name)
	}
	return "", ""
}

// errNarrowingNotKept refuses to narrow the egress of a roaming workspace
// whose servers share no checkpoint directory: the next replica to serve
// its handle would not know, and give back what was taken away.
var errNarrowingNotKept = errors.New("this workspace's handle may be served by any replica, and the replicas share no --checkpoint-dir to record what is " +
	"taken away from its egress, so the next replica would give it back: nothing was changed. Ask the user to start the replicas with a shared " +
	"--checkpoint-dir, or work in a kept workspace (workspace_open with name)")

// canNarrow refuses a narrowing that could not outlive a move of the
// session's workspace to another replica.
func (e *egressPolicy) canNarrow() error {
	if s := e.s; s.roaming != nil && s.roaming.storeLock == nil {
		return errNarrowingNotKept
	}
	return nil
}

// restoreNarrowing takes away from the session what its workspace's
// earlier sessions (here, after a restart, or on another replica) took
// away from their egress.
func (e *egressPolicy) restoreNarrowing() {
	dir, what := e.narrowingRecord()
	if dir == "" {
		return
	}
	t, err := readNarrowed(dir)
	if err != nil {
		e.s.m.log.Warn("a workspace's egress record is unreadable: its egress is locked", "workspace", what, "err", err)
	}
	e.narrowing.Take(t)
}

// record writes what the session took away from its egress into its
// workspace's record, if it has one (narrowingRecord), before the call
// that took it returns.
func (e *egressPolicy) record() error {
	dir, what := e.narrowingRecord()
	if dir == "" {
		return nil
	}
	e.recording.Lock()
	defer e.recording.Unlock()
	if err := addNarrowed(dir, e.narrowing.Taken()); err != nil {
		return fmt.Errorf("it holds for this session, but recording it with %s failed, so a later session on that workspace would not have it: %w; "+
			"ask the user to check the disk of wink-mcp's cache (or checkpoint) directory", what, err)
	}
	return nil
}

// keepNarrowingIn takes away from taken, a workspace the session takes
// over (an attach), what the session took away from its own egress, and
// records it with taken's kept workspace: taking a workspace over never
// gives a host back.
func (h *handoffs) keepNarrowingIn(taken *Session) {
	t := h.s.egressPolicy.narrowing.Taken()
	if !t.Locked && len(t.Dropped) == 0 {
		return
	}
	taken.egressPolicy.narrowing.Take(t)
	if err := taken.egressPolicy.record(); err != nil {
		h.s.m.log.Error("recording an attached workspace's egress narrowing", "session", taken.who.hash(), "err", err)
	}
}

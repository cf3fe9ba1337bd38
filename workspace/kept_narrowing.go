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

// restoreNarrowing takes away from the session what its kept workspace's
// earlier sessions took away from their egress.
func (e *egressPolicy) restoreNarrowing() {
	k := e.s.kept
	if k == nil {
		return
	}
	t, err := readNarrowed(k.narrowingDir())
	if err != nil {
		e.s.m.log.Warn("a kept workspace's egress record is unreadable: its egress is locked", "workspace", k.name, "err", err)
	}
	e.narrowing.Take(t)
}

// record writes what the session took away from its egress into its kept
// workspace's record, if it has one, before the call that took it
// returns.
func (e *egressPolicy) record() error {
	k := e.s.kept
	if k == nil {
		return nil
	}
	e.recording.Lock()
	defer e.recording.Unlock()
	if err := addNarrowed(k.narrowingDir(), e.narrowing.Taken()); err != nil {
		return fmt.Errorf("it holds for this session, but recording it with kept workspace %q failed, so a later session on that workspace would not have it: %w; "+
			"ask the user to check the disk of wink-mcp's cache directory", k.name, err)
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

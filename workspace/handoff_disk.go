package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// A stdio session hands its workspace to another process over the disk: a
// kept workspace made for the handle (FromHandoff in its record). Such a
// workspace is still the session's own, not one a user chose to keep, so
// it lives only while it waits for its handle, a session has it open, or
// its changes wait to be exported: unclaimed at its expiry, or let go by
// the session that attached it, it is deleted once they are
// (handoff_export.go). While it waits, it shares its giver's disk limit:
// the giver's next workspace gets what the waiting ones leave of the
// limit, so the host disk loses at most the limit per session, however
// often a model hands its work over.

// minDiskBytes is the smallest filesystem a session is given: --disk-limit's
// minimum.
const minDiskBytes = 16 << 20

// diskBudget returns the size of the filesystem the session's next
// workspace may have: its disk limit less what the workspaces it handed
// over, still waiting, take.
func (h *handoffs) diskBudget(limit int64) (int64, error) {
	held := h.heldDisk()
	if held == 0 {
		return limit, nil
	}
	if limit-held < minDiskBytes {
		return 0, budgetError(limit, held)
	}
	return limit - held, nil
}

// budgetError says why a session has no disk left for a workspace.
func budgetError(limit, held int64) error {
	return fmt.Errorf("the workspaces this session handed over (workspace_handoff), waiting for workspace_attach or for their changes to be exported (--export-on-exit), take %s of its disk limit of %s "+
		"(--disk-limit, shared with them until they are attached, or expire and are exported), which leaves less than the %s a workspace needs. "+
		"Attach one in another process, wait until one expires (it is deleted once its changes are exported; one whose export failed is exported by the next wink-mcp to start, "+
		"or by wink-mcp export and wink-mcp workspaces rm), or hand over less",
		checkpoints.FormatBytes(held), checkpoints.FormatBytes(limit), checkpoints.FormatBytes(minDiskBytes))
}

// heldDisk sums what the workspaces the session handed over to another
// process take on the disk while they wait for their handles or for
// their export.
func (h *handoffs) heldDisk() int64 {
	var n int64
	for _, root := range h.handedOver {
		if holdsGiversDisk(root) {
			n += keptDiskBytes(root)
		}
	}
	return n
}

// holdsGiversDisk reports whether the handed-over workspace at root takes
// its giver's disk: while it waits for its handle, and while its changes
// wait to be exported, unless a live session attached it (it is within
// that session's limit then).
func holdsGiversDisk(root string) bool {
	rec, err := keep.ReadRecord(root)
	switch {
	case err != nil || !rec.FromHandoff:
		return false // deleted, or opened by its name and kept
	case time.Now().Before(rec.HandoffUntil):
		return true
	case !exportPending(root):
		return false // attached, or expired with nothing to export
	}
	if _, err := os.Lstat(filepath.Join(root, ownerFile)); err != nil {
		return true
	}
	alive, err := probeLock(filepath.Join(root, lockFile))
	return err != nil || !alive
}

// keptDiskBytes is what the files of the kept workspace at root take on
// the disk.
func keptDiskBytes(root string) int64 {
	if info, err := os.Stat(filepath.Join(root, keptDiskImage)); err == nil {
		return allocatedBytes(info)
	}
	return treeBytes(filepath.Join(root, keptSessionDir))
}

// checkHandoffDisk refuses, before anything moves, a handoff to another
// process after which the session's next workspace would have less disk
// than a workspace needs.
func (h *handoffs) checkHandoffDisk() error {
	s := h.s
	s.mu.Lock()
	limit := profileLimits(s.m.cfg.Limits, s.profile).DiskBytes
	limited := s.m.disk != nil && limit > 0
	image, ownFiles := s.diskFile, s.kept == nil || s.kept.fromHandoff
	s.mu.Unlock()
	if !limited {
		return nil
	}
	held := h.heldDisk()
	if ownFiles {
		if info, err := os.Stat(image); err == nil {
			held += allocatedBytes(info)
		}
	}
	if limit-held < minDiskBytes {
		return budgetError(limit, held)
	}
	return nil
}

// checkAttachDisk refuses, before its handle is used, an attach of the
// workspace another process handed over (its handle's digest is key)
// whose filesystem would not fit beside the ones this session handed
// over that still wait: attaching moves it into this session's limit.
func (h *handoffs) checkAttachDisk(key string) error {
	s := h.s
	s.mu.Lock()
	limit := profileLimits(s.m.cfg.Limits, s.profile).DiskBytes
	limited := s.m.disk != nil && limit > 0 && len(h.handedOver) > 0
	s.mu.Unlock()
	var rec keep.HandoffRecord
	if !limited || keep.ReadJSON(filepath.Join(s.m.cfg.CacheDir, keep.HandoffsDir, key+".json"), &rec) != nil || rec.Principal != s.principal {
		return nil // handedOverDisk.claim gives the one answer to a bad handle
	}
	info, err := os.Stat(filepath.Join(keptRoot(s.m.cfg.CacheDir, rec.Workspace), keptDiskImage))
	if err != nil {
		return nil
	}
	if held := h.heldDisk(); held+info.Size() > limit {
		return fmt.Errorf("the workspace's filesystem (%s) does not fit beside the ones this session handed over that wait for workspace_attach (%s) "+
			"within its disk limit of %s (--disk-limit); attach it from another session, or after those are attached or expire",
			checkpoints.FormatBytes(info.Size()), checkpoints.FormatBytes(held), checkpoints.FormatBytes(limit))
	}
	return nil
}

// handedOverAfter is the list of waiting workspaces a session's fresh
// workspace inherits when it hands over the one at root.
func (h *handoffs) handedOverAfter(root string, fromHandoff bool) []string {
	list := slices.Clone(h.handedOver)
	if fromHandoff {
		list = append(list, root)
	}
	return list
}

// expireLater ends, when its handle expires, the workspace name this
// session handed to another process if nobody attached it: its changes
// exported, then its files deleted. Close lets an export under way finish
// within the shutdown's time, as it does the retried removals
// (removeLater); one it cuts short is the next start's to make.
func (h *handoffs) expireLater(name string, expires time.Time) {
	m := h.s.m
	t := time.AfterFunc(time.Until(expires)+time.Second, func() {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return
		}
		m.leftovers.Add(1)
		m.mu.Unlock()
		defer m.leftovers.Done()
		if deleted, err := m.handedOverDisk.endUnclaimed(m.leftoverCtx, name); deleted {
			m.log.Info("a handed-over workspace was not attached in time and is deleted", "event", "handoff_expired", "workspace", name)
		} else if err != nil {
			m.log.Warn("deleting a handed-over workspace nobody attached", "workspace", name, "err", err)
		}
	})
	m.mu.Lock()
	m.handoffTimers = append(m.handoffTimers, t)
	m.mu.Unlock()
}

// persist moves the session's workspace to disk as the kept workspace
// name (its own, when it has one), reserved for its handle until expires,
// stopping its container.
func (h *handoffs) persist(ctx context.Context, name string, expires time.Time) error {
	s := h.s
	h.retire(ctx)
	used := h.egressMeter().Used()
	narrowed := s.egressPolicy.narrowing.Taken()
	if s.kept != nil {
		s.kept.stopRecordingEgress() // reserve writes the record
		// Reserved before the lock goes, so that no name opens it between.
		err := errors.Join(reserve(s.kept.root, s.kept.name, s.principal, expires, used), addNarrowed(s.kept.root, narrowed))
		s.kept.release(used)
		return err
	}
	root := keptRoot(s.m.cfg.CacheDir, name)
	// Reserved before the files move: nothing sweeps a workspace whose
	// handle works, whatever moment a kill comes.
	if err := errors.Join(reserve(root, name, s.principal, expires, used), addNarrowed(root, narrowed)); err != nil {
		return fmt.Errorf("keeping the workspace for its handle: %w", err)
	}
	if err := h.moveTo(root); err != nil {
		return fmt.Errorf("keeping the workspace for its handle: %w", err)
	}
	return nil
}

// reserve records that the kept workspace at root waits for a handle
// until expires, and the egress bytes it has carried; one it makes is
// marked as made by a handoff.
func reserve(root, name, principal string, expires time.Time, egressBytes int64) error {
	rec, err := keep.ReadRecord(root)
	if err != nil {
		now := time.Now().UTC()
		rec = WorkspaceRecord{Name: name, Created: now, LastUsed: now, FromHandoff: true}
	}
	rec.Principal, rec.HandoffUntil = principal, expires
	rec.EgressBytes = max(rec.EgressBytes, egressBytes)
	return writeJSON(filepath.Join(root, recordFile), rec)
}

// moveTo moves an ephemeral session's files to a kept workspace's place.
// The container is gone and the disk unmounted.
func (h *handoffs) moveTo(root string) error {
	s := h.s
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	// Its changes are exported when the kept workspace ends: the marker
	// naming where goes first, the session's own once the files are there.
	if err := h.carryMarker(root); err != nil {
		return err
	}
	k := &keptWorkspace{root: root}
	// What was never made (a disk where disks are not limited, a store
	// before any checkpoint) is not there to move.
	for _, mv := range [][2]string{{s.dir, k.sessionDir()}, {s.storeDir, k.storeDir()}, {s.diskFile, k.diskImage()}} {
		if err := os.Rename(mv[0], mv[1]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(pendingPath(s.m.inst.dir, s.dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

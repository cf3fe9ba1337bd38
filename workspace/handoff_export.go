package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// A workspace a handoff made is still its giving session's own
// (handoff_disk.go), so whatever deletes it (its expiry in the giver's
// process, the next start's sweep, the end of the session that attached
// it) ends that session, and with --export-on-exit exports its changes
// first. The folder they are due in travels with the workspace: the
// giver's marker (export_end.go) moves into it, as <root>/export.json,
// before its files do, and the deleting process exports by that marker
// whatever its own flags. A session that attaches one without a marker,
// in a server with --export-on-exit, marks it with its own folder when
// its mounts are fixed. An export that cannot be written leaves the
// workspace, marker and all, where `wink-mcp export` (FindSessions) and
// every later start (handedOverDisk.sweep) find it; until it is exported it
// takes its giver's disk (handoffs.heldDisk) for as long as the giver lives.
const keptExportFile = "export.json"

// keptExportPath is the marker of the kept workspace at root.
func keptExportPath(root string) string { return filepath.Join(root, keptExportFile) }

// exportPending reports whether the kept workspace at root has changes
// waiting to be exported.
func exportPending(root string) bool {
	_, err := os.Lstat(keptExportPath(root))
	return err == nil
}

// handedOverDisk is the handed-over workspaces on the cache disk, as any
// process of the cache directory finds them: their handle files, and the
// kept workspaces a handoff made, which it claims, exports and deletes.
// It has no lock of its own: each workspace's lock file says who holds
// it, and a handle file is claimed by renaming it away.
type handedOverDisk struct {
	cacheDir string
	log      *slog.Logger
}

// claim takes the handle file of key for principal, once: the file is
// renamed away before it is trusted, so two attachers never both win.
func (d handedOverDisk) claim(key, principal string) (string, error) {
	path := filepath.Join(d.cacheDir, keep.HandoffsDir, key+".json")
	var rec keep.HandoffRecord
	if keep.ReadJSON(path, &rec) != nil || rec.Principal != principal {
		return "", ErrBadHandle
	}
	taken := path + ".taken-" + newWarmKey()
	if err := os.Rename(path, taken); err != nil {
		return "", ErrBadHandle
	}
	defer os.Remove(taken)
	if keep.ReadJSON(taken, &rec) != nil || rec.Principal != principal || !time.Now().Before(rec.Expires) {
		return "", ErrBadHandle
	}
	return rec.Workspace, nil
}

// sweep ends the workspaces handoffs made that nothing holds any more
// (their giver's process ended before they expired, the process that
// attached one was killed, or an export failed), exporting their changes
// before it deletes them, and deletes the handle files past their expiry.
func (d handedOverDisk) sweep(ctx context.Context) error {
	list, err := ListKept(d.cacheDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range list {
		if ctx.Err() != nil {
			break
		}
		if deleted, err := d.endUnclaimed(ctx, k.Name); deleted {
			d.log.Info("deleted a handed-over workspace nobody holds", "event", "handoff_expired", "workspace", k.Name)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	dir := filepath.Join(d.cacheDir, keep.HandoffsDir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		var rec keep.HandoffRecord
		path := filepath.Join(dir, e.Name())
		if keep.ReadJSON(path, &rec) == nil && time.Now().After(rec.Expires) {
			os.Remove(path)
		}
	}
	return errors.Join(errs...)
}

// carryMarker copies the session's pending export marker, if it has one,
// to the kept workspace at root, which its files are about to become;
// the caller removes the session's own once they have moved. Whatever
// moment a kill comes, one of the two markers names the files.
func (h *handoffs) carryMarker(root string) error {
	p, err := readPending(pendingPath(h.s.m.inst.dir, h.s.dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return writePending(keptExportPath(root), p)
}

// markHandedOverLocked records, for a handed-over workspace a session of
// this server opened, the folder its changes are due in when no earlier
// owner recorded one: a server with --export-on-exit exports what its
// sessions changed.
func (s *Session) markHandedOverLocked() error {
	if s.m.cfg.ExportDir == "" || exportPending(s.kept.root) || !mounts.AnyWritable(s.mounts.list) {
		return nil
	}
	if err := writePending(keptExportPath(s.kept.root), pendingExport{Session: s.who.hash(), ExportDir: s.m.cfg.ExportDir}); err != nil {
		return fmt.Errorf("recording that the workspace's changes are to be exported: %w", err)
	}
	return nil
}

// exportKept writes the changes of the handed-over workspace name at
// root where its marker says, and reports whether nothing is left to
// export (no marker, no change, or the patches on disk and the marker
// gone), so that the workspace may be deleted. The caller holds the
// workspace's lock. When the export cannot be written, it logs where the
// changes are kept and how to export them.
func (d handedOverDisk) exportKept(ctx context.Context, root, name string) bool {
	marker := keptExportPath(root)
	p, err := readPending(marker)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		d.log.Error("a handed-over workspace's pending export cannot be read; it is kept", "workspace", name, "marker", marker, "err", err)
		return false
	}
	dir := filepath.Join(root, keptSessionDir)
	release, err := disk.MountForExport(filepath.Join(root, keptDiskImage), dir)
	if err != nil {
		d.log.Error("a handed-over workspace's changes cannot be read; it is kept", "workspace", name, "kept_in", root, "err", err)
		return false
	}
	defer release()
	mounts, err := ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return removeMarker(marker) // its mounts were never used
	}
	if err != nil {
		d.log.Error("a handed-over workspace's changes cannot be read; it is kept", "workspace", name, "kept_in", root, "err", err)
		return false
	}
	if p.To == "" {
		// Named once, so that an export tried again goes to the same folder.
		p.To = exportDirName(p.Session, time.Now())
		if err := writePending(marker, p); err != nil {
			d.log.Warn("recording the export's folder", "workspace", name, "err", err)
		}
	}
	out := p.folder()
	removeStaleTemps(out, mounts)
	d.log.Info("exporting the changes of a handed-over workspace before it is deleted", "session", p.Session, "workspace", name, "to", out)
	if !exportSession(ctx, d.log, p.Session, dir, mounts, out) {
		d.log.Error("the handed-over workspace's changes are kept for export", "session", p.Session, "workspace", name, "kept_in", root,
			"how", exportHint(d.cacheDir, name, out))
		return false
	}
	return removeMarker(marker)
}

// endUnclaimed ends the handed-over workspace name when nothing holds it
// any more: no session has it open and its handle has expired (or was
// used by a process since gone). It exports its changes first, keeping
// it when they cannot be written, and reports whether it deleted it.
func (d handedOverDisk) endUnclaimed(ctx context.Context, name string) (bool, error) {
	root := keptRoot(d.cacheDir, name)
	if rec, err := keep.ReadRecord(root); err != nil || !rec.FromHandoff || time.Now().Before(rec.HandoffUntil) {
		return false, nil
	}
	lock, err := os.OpenFile(filepath.Join(root, lockFile), os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	if err != nil {
		return false, nil // deleted meanwhile
	}
	defer lock.Close()
	if tryLock(lock) != nil {
		return false, nil // opened, or another process ends it
	}
	// Read again under the lock: it may have been opened by its name since.
	if rec, err := keep.ReadRecord(root); err != nil || !rec.FromHandoff || time.Now().Before(rec.HandoffUntil) {
		return false, nil
	}
	os.Remove(filepath.Join(root, ownerFile)) // its owner, if any, is gone
	if !d.exportKept(ctx, root, name) {
		return false, nil
	}
	if err := removeKeptFiles(root, name); err != nil {
		return false, err
	}
	return true, nil
}

// endHandedOverLocked ends the session's handed-over workspace with the
// session: its changes exported, then its files deleted; kept, and let
// go, when they cannot be exported. The container is gone; the caller
// holds Session.mu.
func (h *handoffs) endHandedOverLocked(ctx context.Context) {
	s := h.s
	k := s.kept
	if !s.m.handedOverDisk.exportKept(ctx, k.root, k.name) {
		s.unmountDiskLocked()
		k.release(s.meter.Used())
		return
	}
	k.stopRecordingEgress() // nothing may write its record again
	if s.unmountDiskLocked() {
		if err := removeKeptFiles(k.root, k.name); err != nil {
			s.m.log.Warn("deleting the handed-over workspace at session end", "session", s.who.hash(), "workspace", k.name, "err", err)
		}
	}
	k.lock.Close()
}

// handedOverKept describes, for a message, the handed-over workspaces
// under cacheDir whose changes wait to be exported while nothing holds
// them (not those still waiting for their handle).
func handedOverKept(cacheDir string) []string {
	markers, _ := filepath.Glob(filepath.Join(cacheDir, workspacesDir, "*", keptExportFile))
	var out []string
	for _, marker := range markers {
		root := filepath.Dir(marker)
		rec, err := keep.ReadRecord(root)
		p, perr := readPending(marker)
		if err != nil || perr != nil || time.Now().Before(rec.HandoffUntil) {
			continue
		}
		if alive, err := probeLock(filepath.Join(root, lockFile)); err != nil || alive {
			continue
		}
		name := filepath.Base(root)
		out = append(out, fmt.Sprintf("handed-over workspace %s in %s (%s)", name, root, exportHint(cacheDir, name, p.folder())))
	}
	return out
}

// exportableKept returns, by session directory, the disk images of the
// handed-over workspaces under cacheDir whose changes wait to be
// exported, for `wink-mcp export` to find.
func exportableKept(cacheDir string) map[string]string {
	markers, _ := filepath.Glob(filepath.Join(cacheDir, workspacesDir, "*", keptExportFile))
	out := map[string]string{}
	for _, marker := range markers {
		root := filepath.Dir(marker)
		out[filepath.Join(root, keptSessionDir)] = filepath.Join(root, keptDiskImage)
	}
	return out
}

// isKeptSessionDir reports whether dir is a kept workspace's session
// directory rather than a server instance's.
func isKeptSessionDir(dir string) bool {
	return filepath.Base(dir) == keptSessionDir && filepath.Base(filepath.Dir(filepath.Dir(dir))) == workspacesDir
}

// sessionImage returns the name `wink-mcp export` knows the session in
// dir by (its directory's, or its kept workspace's), and its disk image.
func sessionImage(dir string) (name, image string) {
	if isKeptSessionDir(dir) {
		return filepath.Base(filepath.Dir(dir)), filepath.Join(filepath.Dir(dir), keptDiskImage)
	}
	name = filepath.Base(dir)
	return name, filepath.Join(filepath.Dir(filepath.Dir(dir)), disksDir, name+".img")
}

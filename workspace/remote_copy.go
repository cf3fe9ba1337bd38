package workspace

import (
	"context"
	"io"
	"slices"

	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// With the files on the Podman host (Config.FilesOnEngineHost), a copy
// mount's base stays in the session directory here, as it does locally,
// while the session's copy lives in the workspace volume there: it is
// uploaded once when the session's first container is made, and brought
// back, whole, whenever its changes are read (Changes, Diff, the export at
// the session's end), into <session>/workspace/<path>, where they are read
// as the local copy is.

// copyLimit bounds what one copy brought back may hold: the disk limit,
// or its default when the limit is off.
func (sm *sessionMounts) copyLimit() int64 {
	if limit := sm.s.m.cfg.DiskBytes; limit > 0 {
		return limit
	}
	return DefaultDiskBytes
}

// uploadCopiesLocked copies the base of each copy mount not yet uploaded
// into the container's workspace, owned by uid:gid (mounts.UploadCopies).
func (sm *sessionMounts) uploadCopiesLocked(ctx context.Context, uid, gid int) error {
	s := sm.s
	return mounts.UploadCopies(ctx, sm.list, uid, gid, func(ctx context.Context, r io.Reader) error {
		return s.m.eng.CopyIn(ctx, s.name, Root, r)
	})
}

// pullForExportLocked brings the copies back for the export at the
// session's end, making a container to read the volume if the session's
// went idle. The caller holds pullMu, then the session's mu.
func (sm *sessionMounts) pullForExportLocked(ctx context.Context) error {
	s := sm.s
	if !slices.ContainsFunc(sm.list, func(m mounts.Mounted) bool { return m.Mode == MountCopy && m.Uploaded }) {
		return nil
	}
	if !s.created {
		if _, err := s.createLocked(ctx); err != nil {
			return err
		}
	}
	return sm.pullCopiesOf(ctx, sm.list)
}

// pullCopies brings the copies back for a call reading the changes; the
// returned function ends the read, which no other may overlap.
func (sm *sessionMounts) pullCopies(ctx context.Context) (func(), error) {
	s := sm.s
	sm.pullMu.Lock()
	if _, err := s.ensure(ctx); err != nil {
		sm.pullMu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	mounts := slices.Clone(sm.list)
	s.mu.Unlock()
	if err := sm.pullCopiesOf(ctx, mounts); err != nil {
		sm.pullMu.Unlock()
		return nil, err
	}
	return sm.pullMu.Unlock, nil
}

// pullCopiesOf brings the files of each uploaded copy among list back
// from the session's container (mounts.PullCopies).
func (sm *sessionMounts) pullCopiesOf(ctx context.Context, list []mounts.Mounted) error {
	s := sm.s
	return mounts.PullCopies(ctx, list, s.dir, s.workspaceDir(), sm.copyLimit(), func(ctx context.Context, src string, w io.Writer) error {
		return s.m.eng.CopyOut(ctx, s.name, src, w)
	})
}

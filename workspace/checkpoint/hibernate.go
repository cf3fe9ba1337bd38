package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
)

// Hibernate saves the files of a container whose files go with it
// (engine.Service.FilesGoWithContainer) before it is removed for
// idleness: an automatic checkpoint, taken through client, recorded as a
// restore that the next call finishes in the next container
// (SettlePendingRestore), so that the files are there as they were. It
// takes none when the session has nothing to keep. An error says the files
// could not be saved, and the container must stay. The caller holds the
// session's lock, which keeps the channel open.
func (r *Room) Hibernate(ctx context.Context, client *wire.Client, why string) error {
	if !r.hasCheckpointsOrFiles() {
		return nil
	}
	if client == nil {
		return errors.New("no channel to the container to save its files through")
	}
	unlock, ok := r.deps.TryLockFiles()
	if !ok {
		return errors.New("a call holds the files")
	}
	defer unlock()
	st, err := r.Store()
	if err != nil {
		return err
	}
	if j, err := st.PendingRestore(); err != nil || j != nil {
		// The next container finishes the restore under way, or the
		// journal cannot be read: its files are not the workspace's yet.
		return err
	}
	cp, _, err := r.saveWith(ctx, client, st, Checkpoint{Auto: why})
	if err != nil {
		return err
	}
	r.pruneAuto(st, cp.ID)
	if err := st.BeginRestore(checkpoints.Journal{Target: cp.ID, TargetRoot: cp.Root, Started: time.Now().UTC(), Hibernated: true}); err != nil {
		return fmt.Errorf("recording checkpoint %s for the next container: %w", cp.ID, err)
	}
	r.pending.Store(true)
	r.deps.Log.Info("workspace files saved for the next container", "event", "hibernate", "session", r.deps.Hash(), "checkpoint", cp.ID, "why", why)
	return nil
}

// ForgetHibernation drops the restore Hibernate recorded, when the next
// container has not had it yet: the workspace is being emptied (a reset),
// so that container must start empty. A restore the model asked for stays.
func (r *Room) ForgetHibernation() error {
	if !r.pending.Load() {
		return nil
	}
	st, err := r.Store()
	if err != nil {
		return err
	}
	j, err := st.PendingRestore()
	if err != nil || j == nil || !j.Hibernated {
		return err
	}
	if err := st.EndRestore(); err != nil {
		return err
	}
	r.pending.Store(false)
	return nil
}

package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// The records of a kept workspace on the cache disk, its name and its
// layout live in package keep; these are their names here.
const (
	workspacesDir  = keep.WorkspacesDir
	ownerFile      = keep.OwnerFile
	recordFile     = keep.RecordFile
	keptSessionDir = keep.SessionDir
	keptDiskImage  = keep.DiskImage
	keptStoreDir   = keep.StoreDir
)

// ErrWorkspaceInUse means another session owns the kept workspace asked for.
var ErrWorkspaceInUse = keep.ErrWorkspaceInUse

// CheckWorkspaceName says what is wrong with a kept workspace's name.
func CheckWorkspaceName(name string) error { return keep.CheckWorkspaceName(name) }

// WorkspaceOwner is who owns a kept workspace.
type WorkspaceOwner = keep.WorkspaceOwner

// WorkspaceRecord describes a kept workspace.
type WorkspaceRecord = keep.WorkspaceRecord

// keptWorkspace is a kept workspace some session of this process owns.
type keptWorkspace struct {
	name, root string
	lock       *os.File
	// egressBytes is its record's EgressBytes when it was claimed.
	egressBytes int64
	// fromHandoff is its record's FromHandoff: it goes with its session.
	fromHandoff bool
	// egress keeps its record's EgressBytes up to date while it is owned
	// (nil until its session counts).
	egress *egressRecorder
	// held, when set, is the workspace as its engine holds it
	// (kept_engine.go): it has no root or record on this disk, and lock
	// is its checkpoint store's (kept_store.go).
	held *engine.Held
	// store is the checkpoint store of a workspace its engine holds,
	// where its records are kept (kept_narrowing.go).
	store string
}

func (k *keptWorkspace) sessionDir() string { return filepath.Join(k.root, keptSessionDir) }
func (k *keptWorkspace) diskImage() string  { return filepath.Join(k.root, keptDiskImage) }
func (k *keptWorkspace) storeDir() string   { return filepath.Join(k.root, keptStoreDir) }

// keptRoot is where the kept workspace name lives under cacheDir.
func keptRoot(cacheDir, name string) string { return keep.Root(cacheDir, name) }

// claimWorkspace takes the kept workspace name for a session of inst,
// making it when it does not exist. It fails, naming the owner, when
// another session (of this process or another) owns it, and when it
// belongs to another principal. It does not wait for an owner that is
// exiting: its caller does, with awaitKeptOwner, before it takes its locks.
func claimWorkspace(cacheDir string, opts SessionOptions, inst *instance, sessionHash string) (*keptWorkspace, error) {
	name, principal := opts.Workspace, opts.Principal
	if err := CheckWorkspaceName(name); err != nil {
		return nil, err
	}
	root := keptRoot(cacheDir, name)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("creating workspace %s: %w", name, err)
	}
	lock, err := os.OpenFile(filepath.Join(root, lockFile), os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of workspace %s: %w", name, err)
	}
	if err := tryLock(lock); err != nil {
		lock.Close()
		if pid := exitingHolder(lock.Name()); pid != 0 && errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%w: workspace %q is still locked by wink-mcp process %d, which has exited: a thread of it that has not left the kernel, or a process that inherited its descriptors, holds the lock; try again in a moment",
				ErrWorkspaceInUse, name, pid)
		}
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%w: workspace %q is owned by %s; end that session (close its client), or choose another workspace name", ErrWorkspaceInUse, name, keep.DescribeOwner(root))
		}
		return nil, fmt.Errorf("locking workspace %s: %w", name, err)
	}
	k := &keptWorkspace{name: name, root: root, lock: lock}
	// A refused claim changes nothing: the lock goes, the record stays.
	rec, err := keep.ReadRecord(root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		now := time.Now().UTC()
		rec = WorkspaceRecord{Name: name, Created: now, LastUsed: now, Principal: principal}
	case err != nil:
		lock.Close()
		return nil, err
	case rec.Principal != principal:
		lock.Close()
		return nil, fmt.Errorf("workspace %q belongs to another client (another bearer token); choose another name", name)
	case !opts.handedOver && time.Now().Before(rec.HandoffUntil):
		lock.Close()
		return nil, fmt.Errorf("workspace %q is reserved until %s for the session given its handle (workspace_attach)", name, rec.HandoffUntil.Format(time.RFC3339))
	}
	rec.LastUsed, rec.HandoffUntil = time.Now().UTC(), time.Time{}
	rec.FromHandoff = rec.FromHandoff && opts.handedOver // opened by its name, it is kept as any other
	if err := writeJSON(filepath.Join(root, recordFile), rec); err != nil {
		k.release(0)
		return nil, err
	}
	k.egressBytes, k.fromHandoff = rec.EgressBytes, rec.FromHandoff
	owner := WorkspaceOwner{PID: os.Getpid(), Host: inst.host, Instance: inst.id, Session: sessionHash, Since: time.Now().UTC()}
	if err := writeJSON(filepath.Join(root, ownerFile), owner); err != nil {
		k.release(0)
		return nil, err
	}
	return k, nil
}

// awaitKeptOwner waits, within exitingHolderWait, for the last owner of
// the kept workspace name to finish exiting when it has exited with the
// workspace's lock still held (a server killed with SIGKILL and started
// again at once).
func awaitKeptOwner(cacheDir, name string, log *slog.Logger) {
	if CheckWorkspaceName(name) == nil {
		awaitExitingHolder(filepath.Join(keptRoot(cacheDir, name), lockFile), log)
	}
}

// release records the last use, and the egress bytes its session's
// meter counted, and gives the workspace up.
func (k *keptWorkspace) release(egressBytes int64) {
	if k.held != nil {
		k.lock.Close() // the store's lock, before the lease: the next holder waits for both
		k.held.Release(context.Background())
		return
	}
	k.stopRecordingEgress()
	if rec, err := keep.ReadRecord(k.root); err == nil {
		rec.LastUsed = time.Now().UTC()
		rec.EgressBytes = max(rec.EgressBytes, egressBytes)
		_ = writeJSON(filepath.Join(k.root, recordFile), rec)
	}
	os.Remove(filepath.Join(k.root, ownerFile))
	k.lock.Close()
}

// writeJSON writes v to path atomically.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	_, err = writeAtomically(path, func(w io.Writer) (int, error) { return w.Write(data) })
	return err
}

// removeStaleOf removes the containers of dead wink-mcp processes that
// worked on the kept workspace name: its last owner was killed, and its
// container still has the workspace's files mounted. With an engine that
// lets any server drive any container, the new holder adopts it instead.
func (m *Manager) removeStaleOf(ctx context.Context, name string) error {
	if _, ok := m.eng.(engine.ContainerAdopter); ok {
		return nil // the new holder adopts it (session_adopt.go)
	}
	found, err := m.eng.List(ctx, LabelManaged)
	if err != nil {
		return err
	}
	for _, c := range found {
		if c.Labels[LabelWorkspace] != name || !isOrphan(c.Labels, m.inst, probeLock) {
			continue
		}
		if err := m.discard(ctx, c.Name); err != nil {
			return fmt.Errorf("removing the container %s a dead process left on workspace %s: %w", c.Name, name, err)
		}
		m.log.Info("workspace "+EventOrphanRemoved, "event", EventOrphanRemoved, "container", c.Name, "workspace", name)
	}
	return nil
}

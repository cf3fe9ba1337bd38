package keep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/wink-mcp/wink-mcp/engine"
)

// HandlesDir holds, under a kept workspace's directory, the records of the
// 2026-07-28 workspace handles open on it: each a file named by the
// SHA-256 of its handle (engine.HandleRecord), never by the handle.
const HandlesDir = "handles"

// HandleFiles keeps handle records on the cache disk, beside their kept
// workspace, so that a handle outlives a restart of the server: the
// engine.HandleStore of a server whose kept workspaces are on its disk.
type HandleFiles struct {
	// CacheDir is the server's cache directory.
	CacheDir string
	mu       sync.Mutex // a touch never brings back a record a delete just removed
}

func (f *HandleFiles) path(workspace, digest string) string {
	return filepath.Join(Root(f.CacheDir, workspace), HandlesDir, digest+".json")
}

// PutHandle records rec in its workspace's directory, which must exist.
func (f *HandleFiles) PutHandle(_ context.Context, rec engine.HandleRecord) error {
	if err := rec.Check(); err != nil {
		return err
	}
	if err := CheckWorkspaceName(rec.Workspace); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.write(rec)
}

func (f *HandleFiles) write(rec engine.HandleRecord) error {
	path := f.path(rec.Workspace, rec.Digest)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("recording a workspace handle: %w", err)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("recording a workspace handle: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("recording a workspace handle: %w", err)
	}
	return nil
}

// FindHandle looks for the record of digest under every kept workspace.
func (f *HandleFiles) FindHandle(_ context.Context, digest string) (engine.HandleRecord, error) {
	if !engine.IsHandleDigest(digest) {
		return engine.HandleRecord{}, engine.ErrNoHandleRecord
	}
	matches, err := filepath.Glob(filepath.Join(f.CacheDir, WorkspacesDir, "*", HandlesDir, digest+".json"))
	if err != nil || len(matches) == 0 {
		return engine.HandleRecord{}, engine.ErrNoHandleRecord
	}
	var rec engine.HandleRecord
	if err := ReadJSON(matches[0], &rec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return engine.HandleRecord{}, engine.ErrNoHandleRecord
		}
		return engine.HandleRecord{}, fmt.Errorf("reading a workspace handle's record %s: %w", matches[0], err)
	}
	// The file's place is its truth: a record naming another workspace or
	// digest than where it lies was not written by this store.
	if err := rec.Check(); err != nil || rec.Digest != digest || filepath.Base(filepath.Dir(filepath.Dir(matches[0]))) != rec.Workspace {
		return engine.HandleRecord{}, fmt.Errorf("the workspace handle record %s is not well formed; delete it", matches[0])
	}
	return rec, nil
}

// TouchHandle sets the record's last use, if it is still there.
func (f *HandleFiles) TouchHandle(_ context.Context, rec engine.HandleRecord) error {
	if err := rec.Check(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := os.Stat(f.path(rec.Workspace, rec.Digest)); err != nil {
		return engine.ErrNoHandleRecord
	}
	return f.write(rec)
}

// DeleteHandle removes the record of digest on workspace.
func (f *HandleFiles) DeleteHandle(_ context.Context, workspace, digest string) error {
	if !engine.IsHandleDigest(digest) || CheckWorkspaceName(workspace) != nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.Remove(f.path(workspace, digest)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing a workspace handle's record: %w", err)
	}
	return nil
}

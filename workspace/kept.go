package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace/disk"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
)

// KeptWorkspace describes a kept workspace found under a cache directory.
type KeptWorkspace struct {
	WorkspaceRecord
	// Dir is where it lives.
	Dir string
	// Owner is the session that has it open, nil when none has.
	Owner *WorkspaceOwner
	// FilesBytes is what its files take on the disk; StoreBytes what its
	// checkpoints take.
	FilesBytes, StoreBytes int64
	// Checkpoints are its checkpoints, oldest first.
	Checkpoints []checkpoints.Checkpoint
	// Err says why it cannot be read in full.
	Err error
}

// ListKept lists the kept workspaces under cacheDir, most recently used first.
func ListKept(cacheDir string) ([]KeptWorkspace, error) {
	entries, err := os.ReadDir(filepath.Join(cacheDir, workspacesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []KeptWorkspace
	for _, e := range entries {
		if e.IsDir() && CheckWorkspaceName(e.Name()) == nil {
			out = append(out, describeKept(cacheDir, e.Name()))
		}
	}
	slices.SortFunc(out, func(a, b KeptWorkspace) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

// ShowKept describes one kept workspace.
func ShowKept(cacheDir, name string) (KeptWorkspace, error) {
	if err := CheckWorkspaceName(name); err != nil {
		return KeptWorkspace{}, err
	}
	if _, err := os.Stat(keptRoot(cacheDir, name)); err != nil {
		return KeptWorkspace{}, fmt.Errorf("no kept workspace %q under %s", name, cacheDir)
	}
	return describeKept(cacheDir, name), nil
}

func describeKept(cacheDir, name string) KeptWorkspace {
	root := keptRoot(cacheDir, name)
	k := KeptWorkspace{Dir: root}
	k.Name = name
	rec, err := keep.ReadRecord(root)
	if err != nil {
		k.Err = err
	} else {
		k.WorkspaceRecord = rec
	}
	if alive, err := probeLock(filepath.Join(root, lockFile)); err == nil && alive {
		var o WorkspaceOwner
		if err := keep.ReadJSON(filepath.Join(root, ownerFile), &o); err == nil {
			k.Owner = &o
		} else {
			k.Owner = &WorkspaceOwner{}
		}
	}
	if info, err := os.Stat(filepath.Join(root, keptDiskImage)); err == nil {
		k.FilesBytes = allocatedBytes(info)
	} else {
		k.FilesBytes = treeBytes(filepath.Join(root, keptSessionDir))
	}
	k.StoreBytes = treeBytes(filepath.Join(root, keptStoreDir))
	if _, err := os.Stat(filepath.Join(root, keptStoreDir)); err == nil {
		k.Checkpoints, _ = checkpoints.Look(filepath.Join(root, keptStoreDir)).List()
	}
	return k
}

// RemoveKept deletes a kept workspace, its files and its checkpoints. It
// refuses one a session has open.
func RemoveKept(cacheDir, name string) error {
	if err := CheckWorkspaceName(name); err != nil {
		return err
	}
	root := keptRoot(cacheDir, name)
	awaitExitingHolder(filepath.Join(root, lockFile), slog.New(slog.DiscardHandler))
	lock, err := os.OpenFile(filepath.Join(root, lockFile), os.O_RDWR|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(root); err != nil {
			return fmt.Errorf("no kept workspace %q under %s", name, cacheDir)
		}
	} else if err != nil {
		return err
	} else {
		defer lock.Close()
		if err := tryLock(lock); err != nil {
			return fmt.Errorf("%w: workspace %q is owned by %s; end that session first", ErrWorkspaceInUse, name, keep.DescribeOwner(root))
		}
	}
	return removeKeptFiles(root, name)
}

// removeKeptFiles deletes the kept workspace name at root, whose lock the
// caller holds (or which has none).
func removeKeptFiles(root, name string) error {
	// A process killed while it owned the workspace left its disk mounted.
	if err := disk.UnmountUnder(root); err != nil {
		return err
	}
	if err := removeAll(root); err != nil {
		return fmt.Errorf("deleting workspace %s: %w", name, err)
	}
	return nil
}

// PruneKept deletes the kept workspaces no session has open that were
// last used before cutoff, returning their names; with dryRun it only
// names them. One whose record cannot be read, reserved for a handoff,
// or whose changes wait to be exported (handoff_export.go), is left.
func PruneKept(cacheDir string, cutoff time.Time, dryRun bool) ([]string, error) {
	list, err := ListKept(cacheDir)
	if err != nil {
		return nil, err
	}
	var pruned []string
	var errs []error
	for _, k := range list {
		// In use, unreadable (nothing says when it was used), waiting
		// for its handle or for its export: not pruned.
		if k.Owner != nil || k.Err != nil || k.LastUsed.After(cutoff) || time.Now().Before(k.HandoffUntil) || exportPending(k.Dir) {
			continue
		}
		if !dryRun {
			if err := RemoveKept(cacheDir, k.Name); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		pruned = append(pruned, k.Name)
	}
	return pruned, errors.Join(errs...)
}

// treeBytes sums what the files under dir take on the disk.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			n += allocatedBytes(info)
		}
		return nil
	})
	return n
}

// Summary renders the workspace in one line.
func (k KeptWorkspace) Summary() string {
	state := "free"
	if k.Owner != nil {
		state = strings.TrimPrefix(k.Owner.String(), "in use by ")
	}
	return fmt.Sprintf("%-24s %-19s %9s %9s  %s", k.Name, k.LastUsed.Local().Format("2006-01-02 15:04"),
		checkpoints.FormatBytes(k.FilesBytes), checkpoints.FormatBytes(k.StoreBytes), state)
}

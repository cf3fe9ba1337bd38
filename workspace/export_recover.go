package workspace

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// recoverExports exports the changes of the sessions of a dead instance
// whose export never finished (its server was killed, or stopped waiting),
// removing each marker once the patches are on disk, and logs to log what
// it does, and how to export what it could not from the cache directory
// cacheDir. It returns how many still wait: their files must stay.
func recoverExports(ctx context.Context, log *slog.Logger, cacheDir, instanceDir string) int {
	markers, _ := filepath.Glob(filepath.Join(instanceDir, pendingDir, "*.json"))
	waiting := 0
	for _, marker := range markers {
		if !recoverExport(ctx, log, cacheDir, instanceDir, marker) {
			waiting++
		}
	}
	return waiting
}

// recoverExport exports one marked session; the marker names where to.
func recoverExport(ctx context.Context, log *slog.Logger, cacheDir, instanceDir, marker string) bool {
	p, err := readPending(marker)
	if err != nil {
		log.Error("a pending export cannot be read; its session's files are kept", "marker", marker, "err", err)
		return false
	}
	key := strings.TrimSuffix(filepath.Base(marker), ".json")
	dir := filepath.Join(instanceDir, sessionsDir, key)
	release, err := disk.MountForExport(filepath.Join(instanceDir, disksDir, key+".img"), dir)
	if err != nil {
		log.Error("the changes of a session whose server died cannot be read; its files are kept", "session", p.Session, "kept_in", dir, "err", err)
		return false
	}
	defer release()
	mounts, err := ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// Its mounts were never used, or its files went to a kept workspace.
		return removeMarker(marker)
	}
	if err != nil {
		log.Error("the changes of a session whose server died cannot be read; its files are kept", "session", p.Session, "kept_in", dir, "err", err)
		return false
	}
	if p.To == "" {
		p.To = exportDirName(p.Session, time.Now())
	}
	out := p.folder()
	removeStaleTemps(out, mounts)
	log.Info("exporting the changes of a session whose server stopped before it could", "session", p.Session, "to", out)
	if !exportSession(ctx, log, p.Session, dir, mounts, out) {
		log.Error("the session's changes are kept for export", "session", p.Session, "kept_in", dir, "how", exportHint(cacheDir, key, out))
		return false
	}
	return removeMarker(marker)
}

func removeMarker(marker string) bool {
	err := os.Remove(marker)
	return err == nil || errors.Is(err, fs.ErrNotExist)
}

// removeStaleTemps removes the temporary patch files a killed export left
// in out (writeDurably's names); nothing else writes there.
func removeStaleTemps(out string, mounts []MountInfo) {
	for _, mi := range mounts {
		dst := filepath.Join(out, filepath.FromSlash(mi.Path)+".patch")
		stale, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+"-*"))
		for _, f := range stale {
			os.Remove(f)
		}
	}
}

// lockInstance takes the lock of a dead instance, so that no other server
// sweeps it while this one exports its sessions; ok is false when another
// holds it.
func lockInstance(dir string) (unlock func(), ok bool) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	if err != nil {
		return nil, false
	}
	if tryLock(f) != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

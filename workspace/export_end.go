package workspace

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A session whose changes are to be exported when it ends
// (Config.ExportDir) has a marker, <instance>/exports/<session dir>.json,
// from the moment its mounts are fixed until its patches are on disk.
// While it is there nothing deletes the session's files: not the
// session's end, not the server's shutdown (however it is cut short), and
// not the sweep of a dead instance by the next server, which exports them
// first. The marker lives beside the session directory, not in it, so it
// is seen even when the session's disk is not mounted.
const pendingDir = "exports"

// maxLoggedLeftOut bounds the left-out lines logged per patch; the patch
// names them all.
const maxLoggedLeftOut = 20

// pendingExport is what a marker records.
type pendingExport struct {
	// Session is the session's hash, as the logs name it.
	Session string `json:"session"`
	// ExportDir is Config.ExportDir.
	ExportDir string `json:"export_dir"`
	// To names the session's folder under ExportDir once its export began.
	To string `json:"to,omitempty"`
}

// folder is where the session's patches go: the folder its export began
// in, else one named after the session.
func (p pendingExport) folder() string {
	return filepath.Join(p.ExportDir, cmp.Or(p.To, p.Session))
}

// exportFolderName matches what exportDirName makes.
var exportFolderName = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-z]+$`)

func pendingPath(instanceDir, sessionDir string) string {
	return filepath.Join(instanceDir, pendingDir, filepath.Base(sessionDir)+".json")
}

func writePending(path string, p pendingExport) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return mounts.WriteDurably(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

func readPending(path string) (pendingExport, error) {
	var p pendingExport
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	if err == nil && (!filepath.IsAbs(p.ExportDir) || (p.To != "" && !exportFolderName.MatchString(p.To))) {
		err = fmt.Errorf("%s names an export folder that is not one wink-mcp makes", path)
	}
	return p, err
}

// exportsOnEnd reports whether the session's changes are exported when it
// ends, and so are marked as pending: the server exports, the session
// has a mount that can change, its files would not outlive it anyway (a
// kept workspace's do), and they are on this machine, where another
// process can read them (with Config.FilesOnEngineHost they are brought
// back from the Podman host only while the session's container exists).
func (sm *sessionMounts) exportsOnEnd() bool {
	s := sm.s
	return s.m.cfg.ExportDir != "" && s.kept == nil && !s.m.cfg.FilesOnEngineHost && mounts.AnyWritable(sm.list)
}

// markPendingLocked records that the session's changes wait to be
// exported: beside the session directory, or in the handed-over
// workspace it opened (handoff_export.go).
func (sm *sessionMounts) markPendingLocked() error {
	s := sm.s
	if s.kept != nil && s.kept.fromHandoff {
		return s.markHandedOverLocked()
	}
	if !sm.exportsOnEnd() {
		return nil
	}
	if err := writePending(pendingPath(s.m.inst.dir, s.dir), pendingExport{Session: s.who.hash(), ExportDir: s.m.cfg.ExportDir}); err != nil {
		return fmt.Errorf("recording that the session's changes are to be exported: %w", err)
	}
	return nil
}

// exportOnEnd writes the session's changes under Config.ExportDir and
// reports whether they are on disk, so that the session's files may go.
// It logs each patch, a bounded number of the lines naming what each left
// out, and, when it fails or ctx (the shutdown timeout) cuts it short,
// where the changes are kept and how to export them: a patch that cannot
// finish is not written, and the session's files stay.
func (sm *sessionMounts) exportOnEnd(ctx context.Context, ended time.Time, mounts []MountInfo) bool {
	s := sm.s
	marker := pendingPath(s.m.inst.dir, s.dir)
	to := exportDirName(s.who.hash(), ended)
	if sm.exportsOnEnd() {
		if err := writePending(marker, pendingExport{Session: s.who.hash(), ExportDir: s.m.cfg.ExportDir, To: to}); err != nil {
			s.m.log.Warn("recording the export's folder", "session", s.who.hash(), "err", err)
		}
	}
	ok := exportSession(ctx, s.m.log, s.who.hash(), s.dir, mounts, filepath.Join(s.m.cfg.ExportDir, to))
	if ok && sm.exportsOnEnd() {
		if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.m.log.Warn("removing the pending export's marker", "session", s.who.hash(), "err", err)
		}
	}
	if !ok {
		s.m.log.Error("the session's changes are kept for export", "session", s.who.hash(), "kept_in", s.dir,
			"how", exportHint(s.m.cfg.CacheDir, filepath.Base(s.dir), filepath.Join(s.m.cfg.ExportDir, to)))
	}
	return ok
}

// exportHint says how the changes kept for export of the session that
// `wink-mcp export` knows as session reach the export folder dir: it
// knows a session by its directory's name (which a pooled container's
// session does not share with its hash), a handed-over workspace by its
// name.
func exportHint(cacheDir, session, dir string) string {
	return fmt.Sprintf("the next wink-mcp to start with --cache-dir %s writes them to %s; or now: wink-mcp export --cache-dir %s --session %s --out %s",
		cacheDir, dir, cacheDir, session, dir)
}

// exportSession exports a session's changes to dir, logging what it
// wrote, and reports whether they are all on disk.
func exportSession(ctx context.Context, log *slog.Logger, hash, sessionDir string, infos []MountInfo, dir string) bool {
	start := time.Now()
	written, err := mounts.ExportChanges(ctx, sessionDir, infos, dir)
	took := time.Since(start).Milliseconds()
	for _, p := range written {
		if p.Path != "" {
			log.Info("exported the session's changes", "session", hash, "patch", p.Path, "changed", p.Changed, "left_out", len(p.LeftOut), "duration_ms", took)
		} else {
			log.Info("the session's changes are all left out of patches; nothing to apply", "session", hash, "left_out", len(p.LeftOut))
		}
		for i, line := range p.LeftOut {
			if i == maxLoggedLeftOut {
				log.Warn("more left out of the exported patch", "session", hash, "patch", p.Path, "more", len(p.LeftOut)-i)
				break
			}
			log.Warn("left out of the exported patch", "session", hash, "patch", p.Path, "entry", line)
		}
	}
	if err != nil {
		log.Error("exporting the session's changes failed", "session", hash, "err", err)
		return false
	}
	if len(written) == 0 {
		log.Info("the session changed no mounted folder; nothing exported", "session", hash)
	}
	return true
}

// keptForExport lists, for a message, the sessions of the instance in
// instanceDir whose changes wait to be exported.
func keptForExport(cacheDir, instanceDir string) []string {
	markers, _ := filepath.Glob(filepath.Join(instanceDir, pendingDir, "*.json"))
	var out []string
	for _, path := range markers {
		p, err := readPending(path)
		if err != nil {
			continue
		}
		dir := filepath.Join(instanceDir, sessionsDir, strings.TrimSuffix(filepath.Base(path), ".json"))
		out = append(out, fmt.Sprintf("session %s in %s (%s)", p.Session, dir, exportHint(cacheDir, filepath.Base(dir), p.folder())))
	}
	return out
}

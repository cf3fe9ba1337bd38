package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// Layout of a session directory:
//
//	<session>/workspace            mounted at /workspace
//	<session>/mounts.json          the session's mounts, for `wink-mcp export`
//	<session>/mounts/<n>/upper     an overlay mount's changes
//	<session>/mounts/<n>/work      the overlay's work directory
//	<session>/mounts/<n>/lower     a link to an overlay mount's host folder
//	<session>/mounts/<n>/base      a copy mount's files as they were copied
const (
	mountsManifest = "mounts.json"
	mountsDir      = "mounts"
)

// manifest is the content of mounts.json.
type manifest struct {
	// Session is the hash of the session that owns the workspace, as its
	// logs name it ("" in manifests written before it was recorded).
	Session string      `json:"session,omitempty"`
	Mounts  []MountInfo `json:"mounts"`
}

// writeManifest records the mounts of the session called hash in its
// directory.
func writeManifest(sessionDir, hash string, mounts []mounts.Mounted) error {
	mf := manifest{Session: hash}
	for _, m := range mounts {
		mf.Mounts = append(mf.Mounts, m.Info(sessionDir))
	}
	data, err := json.MarshalIndent(mf, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if _, err := writeAtomically(filepath.Join(sessionDir, mountsManifest), func(w io.Writer) (int, error) { return w.Write(data) }); err != nil {
		return fmt.Errorf("recording the session's mounts: %w", err)
	}
	return nil
}

// ReadManifest returns the mounts recorded in a session directory.
func ReadManifest(sessionDir string) ([]MountInfo, error) {
	mf, err := readManifest(sessionDir)
	return mf.Mounts, err
}

func readManifest(sessionDir string) (manifest, error) {
	var mf manifest
	data, err := os.ReadFile(filepath.Join(sessionDir, mountsManifest))
	if err != nil {
		return mf, err
	}
	if err := json.Unmarshal(data, &mf); err != nil {
		return manifest{}, fmt.Errorf("reading %s: %w", filepath.Join(sessionDir, mountsManifest), err)
	}
	for _, m := range mf.Mounts {
		if !strings.HasPrefix(m.Dir, mountsDir+"/") || strings.Contains(m.Dir, "..") {
			return manifest{}, fmt.Errorf("%s names a mount directory %q outside the session", mountsManifest, m.Dir)
		}
	}
	return mf, nil
}

// parseUser splits a numeric "uid:gid".
func parseUser(user string) (uid, gid int) {
	u, g, _ := strings.Cut(user, ":")
	uid, _ = strconv.Atoi(u)
	gid, _ = strconv.Atoi(g)
	return uid, gid
}

// RootsFunc returns the host folders the MCP client of the call in ctx
// declares as its roots.
type RootsFunc func(ctx context.Context) ([]string, error)

// SetRoots sets how sessions learn their client's roots, which they mount
// when Config.MountRoots is set. Set it before the first session.
func (m *Manager) SetRoots(f RootsFunc) {
	m.rootsMu.Lock()
	m.roots = f
	m.rootsMu.Unlock()
}

// rootsTimeout bounds the wait for a client to list its roots.
const rootsTimeout = 10 * time.Second

// sessionMounts are the host folders a session's workspace shows: fixed
// (resolveLocked) when its first container is made, recorded for `wink-mcp
// export` and the next server's sweep, copied to and brought back from
// the Podman host (Config.FilesOnEngineHost), and exported when the
// session ends. Its fields but pullMu and readOnlyPaths are guarded by
// the session's mu, which the methods named ...Locked expect held.
//
// It holds its session (s) rather than a Deps of its own: its mounts are
// fixed, recorded and brought back as steps of the container's life
// cycle, under the session's mu, and they read what that life cycle owns
// (the session's identity, its kept workspace, its profile's mount plan,
// its container), which changes as the session is pooled, taken or
// handed over.
type sessionMounts struct {
	s *Session
	// pullMu serialises bringing a session's copies back from the Podman
	// host and reading them (Config.FilesOnEngineHost) with each other and
	// with what deletes the files (Reset, end); it is taken before the
	// session's mu.
	pullMu   sync.Mutex
	list     []mounts.Mounted // fixed when the first container is made
	resolved bool
	// rootsOwner is the "uid:gid" owning the client's writable roots, if
	// it chose the user.
	rootsOwner string
	// readOnlyPaths are the workspace paths of the read-only mounts, set
	// when the mounts are fixed.
	readOnlyPaths atomic.Pointer[[]string]
	// recordedAs is the session hash the mounts' manifest and export
	// marker were written under, "" before: see recordLocked.
	recordedAs string
}

// resolveLocked fixes the session's mounts the first time its
// container is made: the configured ones, then, with MountRoots, the
// client's roots. They stay the same for the session's life, so that a
// recreated container finds its overlay directories again. markers names
// the driver of the service's overlay mounts.
func (sm *sessionMounts) resolveLocked(ctx context.Context, markers changes.Markers) error {
	s := sm.s
	if sm.resolved {
		return nil
	}
	if s.setupBase != "" {
		sm.resolved = true // a setup container mounts nothing
		return nil
	}
	m := s.m
	plan := s.mountPlan()
	list := make([]mounts.Mounted, 0, len(plan.Mounts))
	for _, mt := range plan.Mounts {
		list = append(list, mounts.Mounted{Resolved: mt, Dir: filepath.Join(s.dir, mountsDir, strconv.Itoa(len(list)))})
	}
	recorded, err := ReadManifest(s.dir)
	switch {
	case s.kept != nil && err == nil:
		// A kept workspace keeps its mounts: their changes are in its
		// numbered directories.
		if list, err = mounts.Kept(s.kept.name, list, recorded, s.mountPlan().Roots, m.cfg.CacheDir, s.dir); err != nil {
			return err
		}
	case m.cfg.MountRoots:
		for _, mt := range sm.clientRoots(ctx, list) {
			list = append(list, mounts.Mounted{Resolved: mt, Dir: filepath.Join(s.dir, mountsDir, strconv.Itoa(len(list))), FromRoot: true})
		}
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if len(list) > 0 {
		for i := range list {
			if list[i].Mode == MountOverlay {
				list[i].Markers = markers
			}
			list[i].Ignored = m.cfg.ExportIgnored
		}
	}
	sm.list, sm.resolved = list, true
	var readOnly []string
	for _, mt := range list {
		if mt.Mode == MountReadOnly {
			readOnly = append(readOnly, mt.Path)
		}
	}
	sm.readOnlyPaths.Store(&readOnly)
	// Before any call can change them, so that no end (a kill included)
	// deletes the changes before they are exported; without the marker,
	// no container is made.
	if err := sm.recordLocked(); err != nil {
		sm.resolved = false
		return err
	}
	return nil
}

// recordLocked writes, for `wink-mcp export` and the next server's
// sweep, the manifest of the session's mounts and the marker of its
// pending export, under the hash of the session that owns the workspace
// now. A pooled container no session has taken records nothing: it is no
// session, and nothing in it is anyone's work. A session that takes it
// (or attaches a handed-over workspace) records before its first call
// reaches the agent (see ensure).
func (sm *sessionMounts) recordLocked() error {
	s := sm.s
	hash := s.who.hash()
	if !sm.resolved || s.who.id() == "" || sm.recordedAs == hash {
		return nil
	}
	if len(sm.list) > 0 {
		if err := writeManifest(s.dir, hash, sm.list); err != nil {
			return err
		}
	}
	if err := sm.markPendingLocked(); err != nil {
		return err
	}
	sm.recordedAs = hash
	return nil
}

// forgetLocked undoes resolveLocked before any call has run,
// for a profile with other mounts: the copies and overlay directories of
// the old ones go, and the next container fixes the mounts anew.
func (sm *sessionMounts) forgetLocked(ctx context.Context) error {
	s := sm.s
	if s.m.cfg.FilesOnEngineHost {
		if err := s.m.eng.RemoveWorkspace(ctx, s.name); err != nil {
			return fmt.Errorf("deleting the workspace files: %w", err)
		}
	}
	for _, dir := range []string{s.workspaceDir(), filepath.Join(s.dir, mountsDir), filepath.Join(s.dir, mountsManifest)} {
		if err := removeAll(dir); err != nil {
			return fmt.Errorf("deleting the files of the old mounts: %w", err)
		}
	}
	sm.list, sm.resolved, sm.recordedAs = nil, false, ""
	return nil
}

// clientRoots asks the client for its roots and resolves those it may
// mount: under an allowed root, not overlapping another mount. A root the
// session could not edit (owned by root, or by another user than the
// other writable mounts) is mounted read-only. Each root left out is logged.
func (sm *sessionMounts) clientRoots(ctx context.Context, configured []mounts.Mounted) []mounts.Resolved {
	s := sm.s
	m := s.m
	m.rootsMu.Lock()
	f := m.roots
	m.rootsMu.Unlock()
	if f == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	paths, err := f(ctx)
	if err != nil {
		m.log.Warn("the client's roots are not mounted: listing them failed", "session", s.who.hash(), "err", err)
		return nil
	}
	plan := s.mountPlan()
	owner := plan.Owner
	taken := make([]string, 0, len(configured))
	for _, c := range configured {
		taken = append(taken, c.Path)
	}
	var out []mounts.Resolved
	for _, p := range paths {
		r, err := mounts.Resolve(Mount{HostPath: p}, plan.Roots, m.cfg.CacheDir)
		if err == nil && slices.ContainsFunc(taken, func(t string) bool { return mounts.Overlaps(t, r.Path) }) {
			err = fmt.Errorf("its workspace path %q is taken", r.Path)
		}
		if err != nil {
			m.log.Warn("a client root is not mounted", "session", s.who.hash(), "root", p, "err", err)
			continue
		}
		o := fmt.Sprintf("%d:%d", r.UID, r.GID)
		if owner == "" && r.UID != 0 && m.cfg.User == "" {
			owner = o
		}
		if r.UID == 0 || (m.cfg.User == "" && o != owner) {
			r.Mode = MountReadOnly
			m.log.Warn("a client root is mounted read-only: the workspace user could not edit it", "session", s.who.hash(), "root", p, "owner", o)
		}
		taken = append(taken, r.Path)
		out = append(out, r)
	}
	sm.rootsOwner = owner
	return out
}

// Mounts describes the configured host folders every session's workspace
// shows (a session may add its client's roots).
func (m *Manager) Mounts() []MountInfo { return mounts.Infos(m.mounts.Mounts) }

package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace/forkcopy"
	"github.com/wink-mcp/wink-mcp/workspace/keep"
	"github.com/wink-mcp/wink-mcp/workspace/steps"
)

// A fork (workspace_fork) is a copy of a session's workspace handed over
// as a handoff to another process is (handoff_disk.go): a kept workspace
// named fork-<random> with its own files, disk image and checkpoints,
// reserved for a one-time handle until it expires, claimed with
// workspace_attach or workspace_open's handoff, deleted (its changes
// exported first, with --export-on-exit) when unclaimed at its expiry or
// when the session that claimed it ends. Its container is made by its
// claimer's first call, as any kept workspace's is, with the limits and
// the checks after creation of every container. The source's processes
// and background jobs are not carried: a fork has files, not processes.

// Limits of forks.
const (
	// MaxForksPerCall bounds workspace_fork's count.
	MaxForksPerCall = 16
	// DefaultForkLimit is how many forks one principal may have waiting
	// for their handles at once (Config.ForkLimit).
	DefaultForkLimit = 16
	// forkPrefix starts the name of a fork's kept workspace.
	forkPrefix = "fork-"
	// minForkDiskReserve is the least a fork leaves free on the cache
	// disk; it leaves a session's disk limit when that is more
	// (forkDiskReserve), so that forks never take the room a new session
	// of another client needs.
	minForkDiskReserve = 256 << 20
)

// forkRecordFile is, in a fork's kept workspace, what the fork takes of
// its source beyond the files (forkRecord).
const forkRecordFile = "fork.json"

// forkRecord is what a fork takes of its source beyond the files: the
// profile its source ran, which the session that claims it starts with,
// so that a fork has its source's image, limits and environment.
type forkRecord struct {
	Profile string `json:"profile,omitempty"`
}

// forkProfile returns the profile the fork at root was made with, nil for
// the server's default (or a workspace that is no fork, or a profile this
// server does not have).
func forkProfile(cfg *Config, root string) *profiles.Profile {
	var rec forkRecord
	if keep.ReadJSON(filepath.Join(root, forkRecordFile), &rec) != nil || rec.Profile == "" || cfg.Profiles == nil {
		return nil
	}
	p, err := cfg.Profiles.Get(rec.Profile)
	if err != nil {
		return nil
	}
	return p
}

// Fork is one fork of a workspace: the handle that claims it.
type Fork struct {
	// Handle is what workspace_attach (or workspace_open's handoff)
	// takes: 256 random bits, in hex.
	Handle  string
	Expires time.Time
	// Workspace names the kept workspace that holds its files.
	Workspace string
	// Bytes is what its files and checkpoints take on the cache disk.
	Bytes int64
}

// forks is the part of a session that forks its workspace (tools.Forks).
// It holds its session, as handoffs does, for its locks and its files.
type forks struct{ s *Session }

// Fork copies the workspace count times, as it is now or, given a
// checkpoint ID, as that checkpoint saved it, each copy a kept workspace
// waiting ttl for its handle.
func (f *forks) Fork(ctx context.Context, count int, checkpoint string, ttl time.Duration) ([]Fork, error) {
	s, m := f.s, f.s.m
	if count < 1 || count > MaxForksPerCall {
		return nil, fmt.Errorf("count must be 1 to %d, not %d", MaxForksPerCall, count)
	}
	if ttl <= 0 || ttl > MaxHandoffTTL {
		return nil, fmt.Errorf("a fork's handle works for 1 s to %s, not %s", MaxHandoffTTL, ttl)
	}
	if err := f.refusal(); err != nil {
		return nil, err
	}
	defer s.enter()()
	if err := s.checkpoints.SettlePendingRestore(ctx); err != nil {
		return nil, err
	}
	names, expires, err := f.copies(ctx, count, checkpoint, ttl)
	if err != nil {
		return nil, err
	}
	out := make([]Fork, count)
	for i, name := range names {
		out[i] = Fork{Handle: keep.NewHandle(), Expires: expires, Workspace: name, Bytes: keptDiskBytes(keptRoot(m.cfg.CacheDir, name)) + treeBytes(filepath.Join(keptRoot(m.cfg.CacheDir, name), keptStoreDir))}
		rec := keep.HandoffRecord{Workspace: name, Principal: s.principal, Expires: expires}
		if err := writeJSON(filepath.Join(m.cfg.CacheDir, keep.HandoffsDir, keep.HandleKey(out[i].Handle)+".json"), rec); err != nil {
			f.removeAll(names)
			return nil, fmt.Errorf("recording a fork's handle: %w", err)
		}
		s.handoffs.expireLater(name, expires)
	}
	m.log.Info("workspace forked", "event", "fork", "session", s.who.hash(), "forks", count, "checkpoint", checkpoint, "expires", expires)
	return out, nil
}

// copies makes count kept workspaces, each a copy of the workspace (of
// its files as one instant, then of that copy) with its checkpoints, and
// returns their names. The source's file calls wait, as for a checkpoint,
// only while the first copy is made, and its commands only while its disk
// is frozen for it; the other copies are made from the first.
func (f *forks) copies(ctx context.Context, count int, checkpoint string, ttl time.Duration) ([]string, time.Time, error) {
	s, m := f.s, f.s.m
	times := steps.Start()
	unlock, err := s.gate.lockFiles(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
			unlock()
		}
	}()
	times.Done("lock")
	target, err := f.target(ctx, checkpoint)
	if err != nil {
		return nil, time.Time{}, err
	}
	src := forkSource{dir: s.dir, image: s.diskFile, store: s.storeDir, mounted: s.disk}
	var rec forkRecord
	if s.profile != nil {
		rec.Profile = s.profile.Name
	}
	// Reserved for the copies' time too, then again from when they are done.
	expires := time.Now().Add(ttl + time.Hour).UTC()
	names, release, err := m.forks.take(m, s.principal, count, src.bytes(), func(name string) error {
		// Reserved before any file is there: nothing sweeps a workspace
		// whose handle works, whatever moment a kill comes.
		root := keptRoot(m.cfg.CacheDir, name)
		if err := os.MkdirAll(root, 0o700); err != nil {
			return err
		}
		if err := reserve(root, name, s.principal, expires, s.meter.Used()); err != nil {
			return err
		}
		if err := addNarrowed(root, s.egressPolicy.narrowing.Taken()); err != nil { // a fork never has back what its source took away
			return err
		}
		return writeJSON(filepath.Join(root, forkRecordFile), rec)
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	defer release()
	roots := make([]string, count)
	for i, name := range names {
		roots[i] = keptRoot(m.cfg.CacheDir, name)
	}
	times.Done("reserve")
	err = src.snapshot(roots[0])
	s.mu.Unlock()
	unlock()
	locked = false
	times.Done("snapshot")
	if err == nil {
		err = replicateAll(roots[0], roots[1:])
		times.Done("copies")
	}
	for _, root := range roots {
		if err != nil {
			break
		}
		err = restoreFirst(root, target)
	}
	if err != nil {
		f.removeAll(names)
		return nil, time.Time{}, fmt.Errorf("copying the workspace for a fork: %w", err)
	}
	// The handles work for ttl from now, not from before the copies.
	expires = time.Now().Add(ttl).UTC()
	for i, root := range roots {
		if err := reserve(root, names[i], s.principal, expires, 0); err != nil {
			f.removeAll(names)
			return nil, time.Time{}, fmt.Errorf("reserving fork %s: %w", names[i], err)
		}
	}
	m.log.Debug("workspace copied for forks", "session", s.who.hash(), "forks", count, "steps", times.String())
	return names, expires, nil
}

// refusal says why this session's workspace cannot be forked here.
func (f *forks) refusal() error {
	s, m := f.s, f.s.m
	switch {
	case m.cfg.FilesOnEngineHost:
		return errors.New("forks copy the workspace's files on this machine, and this server keeps them on the Podman host (--files-on-podman-host, remote Podman); " +
			"take a checkpoint instead (workspace_checkpoint), or run the server beside its Podman service")
	case m.eng.Service().Pods || m.eng.Service().FilesGoWithContainer:
		return errors.New("forks are not built for --engine kubernetes yet: a workspace's files live in its Pod; take a checkpoint instead (workspace_checkpoint)")
	case s.kept != nil && s.kept.held != nil:
		return fmt.Errorf("kept workspace %q lives in the engine's store, where a fork cannot be made", s.kept.name)
	case m.cfg.ForkLimit == 0:
		return errors.New("forks are turned off on this server (--quota-forks 0)")
	}
	return nil
}

// target returns the checkpoint a fork starts from, nil for the workspace
// as it is now. The caller holds the session's lock.
func (f *forks) target(ctx context.Context, id string) (*checkpoints.Checkpoint, error) {
	if id == "" {
		return nil, nil
	}
	list, err := f.s.checkpoints.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := range list.Checkpoints {
		if list.Checkpoints[i].ID == id {
			return &list.Checkpoints[i], nil
		}
		ids = append(ids, list.Checkpoints[i].ID)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("checkpoint %q: this workspace has no checkpoints (workspace_checkpoint takes one)", id)
	}
	return nil, fmt.Errorf("checkpoint %q: no such checkpoint of this workspace; it has %s (workspace_checkpoints lists them)", id, strings.Join(ids, ", "))
}

// removeAll deletes the forks named, made or half made.
func (f *forks) removeAll(names []string) {
	for _, name := range names {
		if err := removeKeptFiles(keptRoot(f.s.m.cfg.CacheDir, name), name); err != nil {
			f.s.m.log.Warn("removing a fork that could not be made", "workspace", name, "err", err)
		}
	}
}

// forkSource is where a session's files are, read under its lock.
type forkSource struct {
	dir, image, store string
	// mounted says dir is image, loop-mounted.
	mounted bool
}

// bytes is what one copy of the source takes on the cache disk.
func (src forkSource) bytes() int64 {
	var n int64
	if src.mounted {
		if info, err := os.Stat(src.image); err == nil {
			n = allocatedBytes(info)
		}
	} else {
		n = treeBytes(src.dir)
	}
	return n + treeBytes(src.store)
}

// snapshot copies the source into the kept workspace at root: its disk
// image, frozen while it is read when it is mounted, or its directory, and
// its checkpoint store. The caller keeps the session's calls out.
func (src forkSource) snapshot(root string) error {
	dir := filepath.Join(root, keptSessionDir)
	switch {
	case src.mounted:
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if err := forkcopy.Image(src.image, src.dir, []string{filepath.Join(root, keptDiskImage)}); err != nil {
			return err
		}
	case exists(src.image): // not mounted now (its container was removed for idleness)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if err := forkcopy.Sparse(src.image, filepath.Join(root, keptDiskImage)); err != nil {
			return err
		}
	case exists(src.dir):
		if err := copyTree(src.dir, dir); err != nil {
			return err
		}
	}
	if exists(src.store) {
		return copyTree(src.store, filepath.Join(root, keptStoreDir))
	}
	return nil
}

// replicate copies the kept workspace at from, which nothing uses, into
// the one at to: its files and checkpoints.
func replicate(from, to string) error {
	image := filepath.Join(from, keptDiskImage)
	if exists(image) {
		if err := os.Mkdir(filepath.Join(to, keptSessionDir), 0o700); err != nil {
			return err
		}
		if err := forkcopy.Sparse(image, filepath.Join(to, keptDiskImage)); err != nil {
			return err
		}
	} else if dir := filepath.Join(from, keptSessionDir); exists(dir) {
		if err := copyTree(dir, filepath.Join(to, keptSessionDir)); err != nil {
			return err
		}
	}
	if store := filepath.Join(from, keptStoreDir); exists(store) {
		return copyTree(store, filepath.Join(to, keptStoreDir))
	}
	return nil
}

// replicaCopiers is how many copies of a fork are made at once: the copy
// is the kernel's (copy_file_range), and a few at once keep the disk and
// the cores busy where one waits on the other.
const replicaCopiers = 4

// replicateAll copies the kept workspace at from into each of tos, a few
// at once.
func replicateAll(from string, tos []string) error {
	errs := make([]error, len(tos))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(replicaCopiers, len(tos)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = replicate(from, tos[i])
			}
		}()
	}
	for i := range tos {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// restoreFirst records in the kept workspace at root a restore to target,
// which its first call makes (as after hibernation); nothing for nil.
func restoreFirst(root string, target *checkpoints.Checkpoint) error {
	if target == nil {
		return nil
	}
	store := filepath.Join(root, keptStoreDir)
	if !exists(store) {
		return fmt.Errorf("checkpoint %s: the workspace's checkpoint store is gone", target.ID)
	}
	return checkpoints.Look(store).BeginRestore(checkpoints.Journal{Target: target.ID, TargetRoot: target.Root, Started: time.Now().UTC()})
}

// exists reports whether path is there.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

package workspace

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// An engine that keeps kept workspaces itself (engine.KeptStore: the
// Kubernetes engine) holds their files, their record and their owner
// where every server sees them; nothing of them is on this machine's
// disk. Such a workspace has no lock file or record under the cache
// directory; its checkpoints are in the checkpoint directory every server
// shares (kept_store.go); it is not handed over.

// keptHoldWait bounds the wait for a kept workspace whose last holder
// stopped renewing its lease (a server killed), on top of the API calls.
const keptHoldWait = 30

// holdInEngine takes, from the engine, the kept workspace opts names for
// the session hash, or says why it cannot. Its caller holds no lock: it
// may wait seconds for a dead holder's lease to end.
func (m *Manager) holdInEngine(hash string, opts SessionOptions, profile *profiles.Profile) (*engine.Held, error) {
	store, ok := m.eng.(engine.KeptStore)
	if opts.Roaming != "" {
		return holdRoaming(m, store, hash, opts)
	}
	if !ok {
		return nil, nil // newKeptSession says why
	}
	if err := CheckWorkspaceName(opts.Workspace); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*m.cfg.APITimeout+keptHoldWait*1e9)
	defer cancel()
	held, err := store.HoldKept(ctx, engine.KeptAsk{
		Name:      opts.Workspace,
		Holder:    holderName(m, hash),
		Gone:      m.inst.holderGone,
		Principal: opts.Principal,
		Image:     m.keptImage(profile),
		Profile:   profileName(profile),
		DiskBytes: profileLimits(m.cfg.Limits, profile).DiskBytes,
		OnWanted:  opts.OnWanted,
	})
	if err != nil {
		return nil, err
	}
	awaitKeptStore(&m.cfg, held, opts.Workspace)
	return held, nil
}

// holderName is how a lease names this server's session hash as its
// holder (holderGone reads it).
func holderName(m *Manager, hash string) string {
	return fmt.Sprintf("wink-mcp instance %s (pid %d on %s), session %s", m.inst.id, os.Getpid(), m.inst.host, hash)
}

// keptImage is the image a kept workspace's record names: its profile's,
// else the server's first choice.
func (m *Manager) keptImage(p *profiles.Profile) string {
	if p != nil && p.Image != "" {
		return p.Image
	}
	if images := m.cfg.ImageChoices(); len(images) > 0 {
		return images[0]
	}
	return ""
}

// newHeldSession returns a session that owns the kept workspace held,
// its checkpoints in the store its key names (kept_store.go), whose lock
// it takes.
func (m *Manager) newHeldSession(id, hash string, opts SessionOptions, held *engine.Held) (*Session, error) {
	dir, err := keptStoreOf(&m.cfg, held)
	if err != nil {
		return nil, err
	}
	lock, err := lockKeptStore(dir, opts.Workspace, 0)
	if err != nil {
		return nil, err
	}
	s := m.newSession(id, hash)
	s.principal, s.stdio, s.storeDir = opts.Principal, opts.Stdio, dir
	s.kept = &keptWorkspace{name: opts.Workspace, held: held, lock: lock, store: dir}
	s.egressPolicy.restoreNarrowing()                // what its earlier sessions took away stays away
	if _, err := s.checkpoints.Store(); err != nil { // finds a restore its last holder did not finish
		lock.Close()
		return nil, err
	}
	m.log.Info("kept workspace opened", "event", "workspace_opened", "session", hash, "workspace", opts.Workspace, "volume", held.Volume, "checkpoints", dir)
	return s, nil
}

// holderProcess finds the process and host in a holder's identity.
var holderProcess = regexp.MustCompile(`\(pid (\d+) on (\S+)\)`)

// holderGone reports whether the holder of a kept workspace (as
// holdInEngine names it) was a process of this host that has exited: a
// server killed and started again here waits for its lease to run out
// rather than being refused.
func (i *instance) holderGone(holder string) bool {
	match := holderProcess.FindStringSubmatch(holder)
	if match == nil || match[2] != i.host {
		return false
	}
	pid, err := strconv.Atoi(match[1])
	if err != nil || pid == os.Getpid() {
		return false
	}
	return processExiting(pid)
}

// filesGoWithContainer says whether the session's files go with its
// container (engine.Service.FilesGoWithContainer), so that they must be
// saved before it is removed: never for a kept workspace its engine
// holds, whose volume outlives every container.
func (s *Session) filesGoWithContainer() bool {
	return s.m.eng.Service().FilesGoWithContainer && (s.kept == nil || s.kept.held == nil)
}

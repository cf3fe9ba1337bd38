package workspace

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/digest"
)

// digestsDir holds the digests saved with scope global, under the cache
// directory.
const digestsDir = "digests"

// digests is the session's workspace digest (workspace_digest, the
// digest resource and the prompt's section): the session's latest, else
// the one its principal saved for the repository of its first mounted
// folder, else a placeholder generated from that folder. It needs no
// container.
type digests struct {
	s *Session

	mu     sync.Mutex
	latest *digest.Digest
	// placeholder is made once per folder: the folder's declared
	// commands do not change under a session often enough to walk it on
	// every look-up.
	placeholder, placeholderOf string
}

// store is the server's store of saved digests.
func (d *digests) store() *digest.Store {
	return digest.NewStore(filepath.Join(d.s.m.cfg.CacheDir, digestsDir))
}

// folder is the host folder that names the session's repository: its
// first mounted folder (the client's roots once mounted), "" for none.
func (d *digests) folder() string {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mounts.list) > 0 {
		return s.mounts.list[0].HostPath
	}
	if plan := s.m.planOf(s.profile); len(plan.Mounts) > 0 {
		return plan.Mounts[0].HostPath
	}
	return ""
}

// Digest returns the session's digest, looked up in the spec's order:
// the session's latest, the saved one, a placeholder (Source Generated).
func (d *digests) Digest(ctx context.Context) (digest.Digest, error) {
	d.mu.Lock()
	latest := d.latest
	d.mu.Unlock()
	if latest != nil {
		return *latest, nil
	}
	folder := d.folder()
	if folder == "" {
		return digest.Digest{Text: noFolderDigest, Source: digest.Generated}, nil
	}
	repo := digest.Repository(folder)
	saved, ok, err := d.store().Load(d.s.principal, repo)
	switch {
	case err != nil:
		d.s.m.log.Warn("a saved workspace digest cannot be read; a placeholder is shown", "repository", repo, "err", err)
	case ok:
		return saved, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.placeholderOf != folder {
		d.placeholder, d.placeholderOf = digest.Placeholder(folder), folder
		d.s.m.log.Warn("no workspace digest for this repository: a generated placeholder is shown until a model saves one", "repository", repo)
	}
	return digest.Digest{Text: d.placeholder, Source: digest.Generated, Repository: repo}, nil
}

// noFolderDigest is the placeholder of a workspace that mounts no folder.
const noFolderDigest = "# Workspace digest (generated)\n\nThis workspace mounts no host folder, so there is no repository to summarise and nothing saved for one. " +
	"Save a digest with workspace_digest (scope session) once you know the layout and the commands, for the rest of this session.\n"

// errNoRepository refuses a global save in a workspace without a folder.
var errNoRepository = errors.New("scope: global keeps a digest for the repository of a mounted host folder, and this workspace mounts none; save it with scope session")

// SaveDigest makes text the session's digest and, when global, the one
// its principal's next sessions of the same repository start with.
func (d *digests) SaveDigest(ctx context.Context, text string, global bool) (digest.Digest, error) {
	if err := digest.Check(text); err != nil {
		return digest.Digest{}, err
	}
	now := time.Now().UTC()
	saved := digest.Digest{Text: text, Source: digest.FromSession, Saved: now}
	if folder := d.folder(); folder != "" {
		saved.Repository = digest.Repository(folder)
	}
	if global {
		if saved.Repository == "" {
			return digest.Digest{}, errNoRepository
		}
		if _, err := d.store().Save(d.s.principal, saved.Repository, text, now); err != nil {
			return digest.Digest{}, err
		}
	}
	d.mu.Lock()
	d.latest = &saved
	d.mu.Unlock()
	return saved, nil
}

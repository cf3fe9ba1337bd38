package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Store keeps the digests saved with scope global, one file per
// principal and repository in its directory, so that one principal's
// digest is never another's: the file's name is a hash of both, and its
// record repeats the repository, checked on load.
type Store struct{ dir string }

// NewStore returns the store in dir, made (mode 0700) on the first save.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// record is a saved digest, as JSON.
type record struct {
	Repository string    `json:"repository"`
	Text       string    `json:"text"`
	Saved      time.Time `json:"saved"`
}

// path is the file of principal's digest of repository.
func (s *Store) path(principal, repository string) string {
	sum := sha256.Sum256([]byte("wink-mcp digest\x00" + principal + "\x00" + repository))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load returns principal's saved digest of repository; ok is false when
// there is none.
func (s *Store) Load(principal, repository string) (d Digest, ok bool, err error) {
	f, err := os.Open(s.path(principal, repository))
	if errors.Is(err, fs.ErrNotExist) {
		return Digest{}, false, nil
	}
	if err != nil {
		return Digest{}, false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 2*MaxBytes+4096))
	if err != nil {
		return Digest{}, false, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil || r.Repository != repository || Check(r.Text) != nil {
		return Digest{}, false, fmt.Errorf("the saved digest %s is damaged; save a new one with workspace_digest", f.Name())
	}
	return Digest{Text: r.Text, Source: FromStore, Repository: repository, Saved: r.Saved}, true, nil
}

// Save keeps text as principal's digest of repository, replacing the
// one before, atomically (a reader sees the old digest or the new one).
func (s *Store) Save(principal, repository, text string, now time.Time) (Digest, error) {
	if err := Check(text); err != nil {
		return Digest{}, err
	}
	if repository == "" {
		return Digest{}, errors.New("no repository to save the digest for")
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return Digest{}, err
	}
	b, err := json.Marshal(record{Repository: repository, Text: text, Saved: now.UTC()})
	if err != nil {
		return Digest{}, err
	}
	tmp, err := os.CreateTemp(s.dir, ".digest-*")
	if err != nil {
		return Digest{}, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return Digest{}, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return Digest{}, err
	}
	if err := tmp.Close(); err != nil {
		return Digest{}, err
	}
	if err := os.Rename(tmp.Name(), s.path(principal, repository)); err != nil {
		return Digest{}, err
	}
	return Digest{Text: text, Source: FromStore, Repository: repository, Saved: now.UTC()}, nil
}

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// ErrNoHandleRecord means no record of a workspace handle is stored: it
// was never recorded, or was closed or expired.
var ErrNoHandleRecord = errors.New("no record of this workspace handle")

// HandleRecord is what a server keeps of a 2026-07-28 workspace handle on
// a kept workspace (or on a roaming one: KeptAsk.Roaming), so that another server (a replica, or this one after a
// restart) can serve it: never the handle, only its digest.
type HandleRecord struct {
	// Digest is the handle's SHA-256 in hex (HandleDigest).
	Digest string `json:"digest"`
	// Principal is the digest of the client the handle is bound to ("" for
	// a server without bearer tokens, whose one client is local).
	Principal string `json:"principal"`
	// Workspace is the kept workspace the handle names, or its roaming
	// workspace's RoamingName when Roaming.
	Workspace string `json:"workspace"`
	// Roaming says the handle names a workspace that is not kept, which
	// any server may serve in turn (KeptAsk.Roaming).
	Roaming bool `json:"roaming,omitempty"`
	// Profile is the profile it was opened with, "" for the default.
	Profile string `json:"profile,omitempty"`
	// Used is when a call on the handle last ended (or it was opened):
	// a handle unused for the idle timeout has expired.
	Used time.Time `json:"used"`
}

// HandleStore is where the records of workspace handles are kept: on the
// cache disk beside their kept workspace (package keep), or by an engine
// whose kept workspaces every replica sees (the Kubernetes engine: the
// kept workspace's claim). Implementations are safe for concurrent use.
type HandleStore interface {
	// PutHandle records rec (replacing a record of the same digest).
	PutHandle(ctx context.Context, rec HandleRecord) error
	// FindHandle returns the record of digest, ErrNoHandleRecord when none.
	FindHandle(ctx context.Context, digest string) (HandleRecord, error)
	// TouchHandle sets the Used time of the record of rec.Digest to
	// rec.Used; ErrNoHandleRecord when the record is gone (the handle was
	// closed elsewhere).
	TouchHandle(ctx context.Context, rec HandleRecord) error
	// DeleteHandle removes the record of digest on workspace; a record
	// already gone is no error.
	DeleteHandle(ctx context.Context, workspace, digest string) error
}

// HandleDigest returns what a handle is recorded by: its SHA-256, in hex.
func HandleDigest(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return hex.EncodeToString(sum[:])
}

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// IsHandleDigest reports whether d has the form of a HandleDigest.
func IsHandleDigest(d string) bool { return hexDigest.MatchString(d) }

// Check says what is wrong with a record read back or about to be
// written: a store never trusts what it reads.
func (r HandleRecord) Check() error {
	switch {
	case !IsHandleDigest(r.Digest):
		return fmt.Errorf("handle record: digest %q is not a SHA-256 in lower-case hex", r.Digest)
	case r.Workspace == "":
		return errors.New("handle record: no workspace")
	case r.Roaming && !IsRoamingName(r.Workspace):
		return fmt.Errorf("handle record: roaming workspace %q is not a roaming workspace's name", r.Workspace)
	case r.Used.IsZero():
		return errors.New("handle record: no last use")
	}
	return nil
}

// Expired reports whether the record's handle, unused for idle at now,
// has expired; idle <= 0 never expires one.
func (r HandleRecord) Expired(now time.Time, idle time.Duration) bool {
	return idle > 0 && now.Sub(r.Used) >= idle
}

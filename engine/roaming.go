package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"time"
)

// roamingPrefix begins every RoamingName.
const roamingPrefix = "r"

var roamingName = regexp.MustCompile(`^r[0-9a-f]{32}$`)

// NewRoamingName returns a new name for a roaming workspace
// (KeptAsk.Roaming): "r" and 128 random bits in hex, usable as a label
// value and in an object's name. It is not secret (it is a label of the
// workspace's container); the handle is.
func NewRoamingName() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return roamingPrefix + hex.EncodeToString(b)
}

// IsRoamingName reports whether name has the form of a NewRoamingName.
func IsRoamingName(name string) bool { return roamingName.MatchString(name) }

// HandoffRecord is a roaming workspace handed over (workspace_handoff)
// while it waits, in the engine, for the session that takes it: never
// the handoff's handle, only its digest.
type HandoffRecord struct {
	// Digest is the handoff handle's SHA-256 in hex (HandleDigest).
	Digest string `json:"digest"`
	// Principal is the digest of the client that handed it over; only
	// the same principal takes it.
	Principal string `json:"principal"`
	// Profile is the profile the workspace runs, "" for the default.
	Profile string `json:"profile,omitempty"`
	// Expires is when the handoff stops working.
	Expires time.Time `json:"expires"`
}

// RoamingHandoffs is implemented by an engine whose roaming workspaces
// (KeptAsk.Roaming) can wait for a handoff's taker there, where every
// server finds them (the Kubernetes engine: on the workspace's Lease).
// Implementations are safe for concurrent use.
type RoamingHandoffs interface {
	// PutHandoff records rec on the roaming workspace name, which the
	// caller holds.
	PutHandoff(ctx context.Context, name string, rec HandoffRecord) error
	// TakeHandoff finds the handoff of digest, and, when it is principal's
	// and has not expired, replaces it with the record of the handle that
	// takes it (handle, whose Workspace, Profile and Roaming it sets) in
	// one write that fails if anything changed since it was read: of
	// several takers, one gets it. It returns the handle's record and
	// the handoff's it replaced. ErrNoHandleRecord when there is none it
	// may take (never given, taken, expired, another principal's).
	TakeHandoff(ctx context.Context, digest, principal string, handle HandleRecord) (HandleRecord, HandoffRecord, error)
	// GiveBackHandoff undoes a TakeHandoff whose taker could not open the
	// workspace: the handle's record taken goes and the handoff's record
	// handoff is back, in one write, so the handoff works again until it
	// expires. Nothing when taken's record is no longer there.
	GiveBackHandoff(ctx context.Context, taken HandleRecord, handoff HandoffRecord) error
	// RoamingNames returns the names of the roaming workspaces that exist
	// (their lease does): a roaming workspace's checkpoint store whose
	// name is not among them belongs to a workspace that ended.
	RoamingNames(ctx context.Context) ([]string, error)
}

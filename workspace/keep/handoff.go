package keep

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// HandoffsDir holds, under the cache directory, the handles of workspaces
// handed over by stdio sessions, for another process to attach: each a
// file named by the SHA-256 of its handle, never by the handle.
const HandoffsDir = "handoffs"

// HandoffRecord is a handle's file, for a workspace handed over to another process.
type HandoffRecord struct {
	Workspace string    `json:"workspace"`
	Principal string    `json:"principal,omitempty"`
	Expires   time.Time `json:"expires"`
}

// HandleKey returns what a handle is looked up by: its SHA-256, in hex.
func HandleKey(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return hex.EncodeToString(sum[:])
}

// NewHandle returns a new handle: 256 random bits, in hex.
func NewHandle() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

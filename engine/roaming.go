package engine

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
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

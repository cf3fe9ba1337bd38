package workspace

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"regexp"
)

// Labels put on every container wink-mcp creates. They let any wink-mcp on
// the host recognise the container as one of ours, tell which server
// instance owns it, and check whether that instance is still alive.
const (
	// LabelManaged marks a container as created by wink-mcp ("true").
	LabelManaged = "io.wink-mcp.managed"
	// LabelInstance is the ID of the server instance that owns the container.
	LabelInstance = "io.wink-mcp.instance"
	// LabelSession is the session hash, or the random key of a container
	// made ahead for a pool; never the raw session ID.
	LabelSession = "io.wink-mcp.session"
	// LabelLock is the absolute path of the owning instance's lock file,
	// held locked for as long as that instance runs.
	LabelLock = "io.wink-mcp.lock"
	// LabelHost is the hostname of the owning instance; the lock file only
	// means something on that host.
	LabelHost = "io.wink-mcp.host"
	// LabelWorkspace names the kept workspace a container works on.
	LabelWorkspace = "io.wink-mcp.workspace"
	// LabelRoaming names the roaming workspace a container is (roaming.go).
	LabelRoaming = "io.wink-mcp.roaming"
)

// sessionHashLen is the number of hex digits of the session hash (64 bits).
const sessionHashLen = 16

// namePrefixPattern is what Podman accepts at the start of a container name.
var namePrefixPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,39}$`)

// sessionHash derives the public name of a session from its ID with an HMAC
// keyed by a secret of this server instance: the same session ID ("stdio" in
// every stdio server, say) gives different hashes in different servers, and
// a container name or a log line never reveals a session ID that could be
// replayed.
func sessionHash(secret []byte, sessionID string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(sessionID))
	return hex.EncodeToString(mac.Sum(nil))[:sessionHashLen]
}

// containerName is the deterministic name of a session's container.
func containerName(prefix, hash string) string {
	return prefix + "-" + hash
}

// ownerLabels are the labels of a container owned by inst.
func ownerLabels(inst *instance, hash string) map[string]string {
	return map[string]string{
		LabelManaged:  "true",
		LabelInstance: inst.id,
		LabelSession:  hash,
		LabelLock:     inst.lockPath,
		LabelHost:     inst.host,
	}
}

// labels are the labels of the session's container.
func (s *Session) labels() map[string]string {
	l := ownerLabels(s.m.inst, s.key)
	if s.kept != nil {
		l[LabelWorkspace] = s.kept.name
	}
	if s.roaming != nil {
		l[LabelRoaming] = s.roaming.name
	}
	if s.serviceOf != "" {
		l[LabelServiceOf] = s.serviceOf
	}
	return l
}

// lockProbe reports whether the instance holding the lock file at path is
// alive. It returns an error when it cannot tell.
type lockProbe func(path string) (alive bool, err error)

// isOrphan decides whether a container with these labels belongs to a server
// instance that is gone, so it may be removed. It answers false whenever it
// cannot be sure: a container of another host, of this very instance, with a
// malformed label, or whose lock cannot be checked is left alone. The one rule
// that matters: never remove a container of a live wink-mcp.
func isOrphan(labels map[string]string, self *instance, alive lockProbe) bool {
	if labels[LabelManaged] != "true" {
		return false
	}
	id, lock := labels[LabelInstance], labels[LabelLock]
	if id == "" || id == self.id || labels[LabelHost] != self.host {
		return false
	}
	if !filepath.IsAbs(lock) || filepath.Clean(lock) != lock {
		return false
	}
	live, err := alive(lock)
	return err == nil && !live
}

//go:build containers_image_openpgp

package podman

import (
	"regexp"
	"strings"
)

// AttachCommand implements engine.Engine: podman exec with the service
// this engine reached (or will try first), and the key of an ssh:// one.
func (e *Engine) AttachCommand(name string) string {
	e.mu.Lock()
	uri := e.uri
	e.mu.Unlock()
	if uri == "" {
		uri = candidateURIs(e.url, "")[0]
	}
	args := []string{"podman", "--url", shellQuote(uri)}
	if e.identity != "" && strings.HasPrefix(uri, "ssh://") {
		args = append(args, "--identity", shellQuote(e.identity))
	}
	return strings.Join(append(args, "exec", "-it", shellQuote(name), "sh"), " ")
}

// shellSafe matches words a POSIX shell reads as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

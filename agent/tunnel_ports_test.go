//go:build linux

package agent

import (
	"strings"
	"testing"
)

// A port request is a port alone or a port and a token of 32 lowercase hex
// digits; anything else, and a line past 128 bytes, is malformed.
func TestReadPortRequest(t *testing.T) {
	token := strings.Repeat("0a", 16)
	for _, c := range []struct {
		line, token string
		port        int
		ok          bool
	}{
		{"port 8080\n", "", 8080, true},
		{"port 8080 hand " + token + "\n", token, 8080, true},
		{"port 8080 hand " + token[:31] + "\n", "", 0, false},
		{"port 8080 hand " + token + "0\n", "", 0, false},
		{"port 8080 hand " + strings.ToUpper(token) + "\n", "", 0, false},
		{"port 8080 hand ../../" + token[6:] + "\n", "", 0, false},
		{"port 0\n", "", 0, false},
		{"port 65536 hand " + token + "\n", token, 65536, false},
		{"port 80" + strings.Repeat(" ", 200) + "\n", "", 0, false},
		{"8080\n", "", 0, false},
		{"port 8080", "", 0, false},
	} {
		port, tok, ok := readPortRequest(strings.NewReader(c.line))
		if ok != c.ok || (ok && (port != c.port || tok != c.token)) {
			t.Errorf("%q: port %d token %q ok %v; want %d %q %v", c.line, port, tok, ok, c.port, c.token, c.ok)
		}
	}
}

package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHealthNeedsNoTokenAndSaysNothing checks /healthz as a kubelet probes
// it (a Pod's address as the Host, no token) on a server that asks for a
// token, and that every other path still goes through the guard.
func TestHealthNeedsNoTokenAndSaysNothing(t *testing.T) {
	base := serveHTTP(t, httpTestServer(t, func(c *Config) { c.HTTP.AuthTokens = []string{"0123456789abcdef0123"} }), TransportHTTP)
	for _, tc := range []struct {
		name, method, path, host string
		status                   int
		body                     string
	}{
		{"probe from the kubelet", http.MethodGet, healthPath, "10.232.0.7:8080", http.StatusOK, "ok\n"},
		{"head", http.MethodHead, healthPath, "", http.StatusOK, ""},
		{"post is refused", http.MethodPost, healthPath, "", http.StatusMethodNotAllowed, "method not allowed: /healthz answers GET and HEAD\n"},
		{"a path below is the guard's", http.MethodGet, healthPath + "/x", "", http.StatusUnauthorized, ""},
		{"the transport still needs the token", http.MethodPost, streamablePath, "", http.StatusUnauthorized, ""},
		{"and a known Host", http.MethodPost, streamablePath, "10.232.0.7:8080", http.StatusForbidden, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(initializeBody))
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s: %s %q; want %d", tc.method, tc.path, resp.Status, body, tc.status)
			}
			if tc.body != "" && string(body) != tc.body {
				t.Errorf("%s %s: body %q; want %q", tc.method, tc.path, body, tc.body)
			}
		})
	}
}

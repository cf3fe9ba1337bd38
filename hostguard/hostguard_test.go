package hostguard

import (
	"net/http"
	"testing"
)

// Rules accept loopback names, the listen address and the names and
// origins given, and refuse every other Host form and Origin, naming the
// flag that would allow it.
func TestRulesCheckHostAndOrigin(t *testing.T) {
	t.Parallel()
	r := New([]string{"Preview.Example"}, []string{"https://app.example/"}, []string{"127.0.0.1:8080", "0.0.0.0:9"})
	tests := []struct {
		name, host, origin, want string // want: "" accepted, else the reason
	}{
		{"loopback address", "127.0.0.1:8080", "", ""},
		{"localhost any port", "localhost:1", "", ""},
		{"localhost without port", "localhost", "", ""},
		{"IPv6 loopback", "[::1]:8080", "", ""},
		{"an allowed host, any case", "preview.example:8080", "", ""},
		{"a loopback origin", "127.0.0.1:8080", "http://localhost:3000", ""},
		{"an allowed origin", "127.0.0.1:8080", "https://app.example", ""},
		{"a foreign name", "attacker.example:8080", "", "host"},
		{"a foreign name without port", "attacker.example", "", "host"},
		{"a wildcard listen address is no name", "0.0.0.0:9", "", "host"},
		{"another interface's address", "192.168.1.20:8080", "", "host"},
		{"a name embedding loopback", "127.0.0.1.attacker.example", "", "host"},
		{"no Host", "", "", "host"},
		{"a foreign origin", "127.0.0.1:8080", "http://attacker.example", "origin"},
		{"the allowed origin over http", "127.0.0.1:8080", "http://app.example", "origin"},
		{"the null origin", "127.0.0.1:8080", "null", "origin"},
		{"a look-alike origin", "127.0.0.1:8080", "http://localhost.attacker.example", "origin"},
		{"a file origin", "127.0.0.1:8080", "file://localhost", "origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &http.Request{Host: tt.host, Header: http.Header{}}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			got := r.Check(req)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("refused: %+v", got)
			case tt.want != "" && (got == nil || got.Reason != tt.want):
				t.Errorf("got %+v; want refused for its %s", got, tt.want)
			case got != nil && got.Message == "":
				t.Errorf("a refusal without a message")
			}
		})
	}
	var zero Rules
	if zero.Check(&http.Request{Host: "localhost:1", Header: http.Header{}}) != nil || zero.HostAllowed("attacker.example") {
		t.Errorf("the zero Rules must accept loopback names only")
	}
}

package images

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// setupProxyFor serves a proxy configured as a setup's is for p, which
// resolves every name to loopback, and returns a function that sends it a
// CONNECT to host:port and returns the answer's body.
func setupProxyFor(t *testing.T, p *profiles.Profile, r *SetupRefusals) func(hostPort string) string {
	t.Helper()
	policy, err := egress.ParsePolicy(p.Egress.Setup)
	if err != nil {
		t.Fatal(err)
	}
	s := egress.NewSession(egress.Config{Policy: policy, Wording: SetupWording(p), OnRefusal: r.Note,
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}}, "setup")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { ln.Close() })
	return func(hostPort string) string {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", hostPort)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
}

// TestSetupRefusalsSayHowToAllow sends a setup's proxy connections it
// refuses: each answer, and the failed command's explanation, say why in
// the profile's terms (egress.setup, never --egress) and the pattern to
// add; each host is explained once, and a bounded number of them.
func TestSetupRefusalsSayHowToAllow(t *testing.T) {
	p := &profiles.Profile{Name: "app", File: "p.yaml", Line: 3, Egress: profiles.Egress{Setup: []string{"localhost", "*.example.org"}}}
	r := &SetupRefusals{profile: p}
	connect := setupProxyFor(t, p, r)
	if r.Explain() != "" {
		t.Error("no refusal explained as some")
	}
	bodies := []string{connect("packages.example.net:443"), connect("packages.example.net:443"), connect("localhost:80"), connect("mirror.example.org:8080")}
	for _, body := range bodies {
		if !strings.Contains(body, "egress.setup of profile \"app\" (p.yaml:3)") || strings.Contains(body, "--egress ") {
			t.Errorf("the proxy's answer: %q; want it to name egress.setup of the profile, not --egress", body)
		}
	}
	text := r.Explain()
	for _, want := range []string{
		"refused 4 connection(s)",
		`packages.example.net:443: no egress.setup pattern allows it (allowed: localhost, *.example.org). If the setup needs it, add "packages.example.net" to egress.setup of profile "app" (p.yaml:3); sessions reach it only if egress.session names it too.`,
		`localhost:80: it resolves to 127.0.0.1, a loopback address (rule localhost). Only a pattern naming exactly this host and port reaches such an address. If the setup needs it, add "localhost:80"`,
		`mirror.example.org:8080: no egress.setup pattern allows it`, `add "mirror.example.org:8080"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "packages.example.net:443") != 1 || strings.Contains(text, "--egress ") {
		t.Errorf("want each refused host once and no server flag:\n%s", text)
	}
	for i := range maxSetupRefusals + 5 {
		connect(fmt.Sprintf("h%d.invalid:443", i))
	}
	if text := r.Explain(); !strings.Contains(text, "and 8 refusals of other hosts") {
		t.Errorf("past the bound: %s", text)
	}
	offline := &SetupRefusals{profile: &profiles.Profile{Name: "off", File: "p.yaml", Line: 9}}
	if text := offline.Explain(); !strings.Contains(text, `the setup has none, because egress.setup of profile "off" (p.yaml:9) names no host`) {
		t.Errorf("a setup without egress.setup: %q", text)
	}
}

// TestProfileSessionRefusalsNameBothLists: a session whose profile adds
// egress.session patterns is told both ways to allow a host.
func TestProfileSessionRefusalsNameBothLists(t *testing.T) {
	p := &profiles.Profile{Name: "web", File: "p.yaml", Line: 7}
	w := SessionWording(p)
	if got := w.Allow("api.example.com"); got != `Ask the user to start wink-mcp with --egress api.example.com, or to add "api.example.com" to egress.session of profile "web" (p.yaml:7), if this host is needed.` {
		t.Errorf("remedy: %q", got)
	}
}

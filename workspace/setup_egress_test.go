package workspace

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// TestSetupRefusalsSayHowToAllow feeds a setup's refusal log records, as
// the proxy writes them, through the logger the setup gives its proxy:
// each host is explained once, in the profile's terms, whatever the
// server's log level, and the records still reach the server's log.
func TestSetupRefusalsSayHowToAllow(t *testing.T) {
	p := &profiles.Profile{Name: "app", File: "p.yaml", Line: 3, Egress: profiles.Egress{Setup: []string{"localhost", "*.example.org"}}}
	policy, err := egress.ParsePolicy(p.Egress.Setup)
	if err != nil {
		t.Fatal(err)
	}
	r := &setupRefusals{profile: p, policy: policy}
	var logged strings.Builder
	log := r.logger(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	refuse := func(host string, port, status int, reason string) {
		log.Info("egress refused", "event", "egress", "session", "s", "allowed", false, "status", status, "host", host, "port", port, "reason", reason)
	}
	if r.explain() != "" {
		t.Error("no refusal explained as some")
	}
	log.Info("egress allowed", "event", "egress", "allowed", true, "host", "pkg.example.org", "port", 443)
	refuse("registry.npmjs.org", 443, 403, "no --egress pattern allows it (allowed: localhost, *.example.org)")
	refuse("registry.npmjs.org", 443, 403, "no --egress pattern allows it (allowed: localhost, *.example.org)")
	refuse("localhost", 80, 403, "it resolves to 127.0.0.1, a loopback address (rule localhost)")
	refuse("mirror.example.org", 8080, 403, "no --egress pattern allows it (allowed: localhost, *.example.org)")
	text := r.explain()
	for _, want := range []string{
		"refused 4 connection(s)",
		`registry.npmjs.org:443: no pattern of egress.setup allows it (egress.setup: localhost, *.example.org). If the setup needs it, add "registry.npmjs.org" to egress.setup of profile "app" (p.yaml:3)`,
		`localhost:80: it resolves to 127.0.0.1, a loopback address (rule localhost). Only a pattern naming exactly this host and port reaches such an address: add "localhost:80"`,
		`mirror.example.org:8080: no pattern of egress.setup allows it`, `add "mirror.example.org:8080"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "registry.npmjs.org:443") != 1 || strings.Contains(text, "pkg.example.org") || strings.Contains(text, "--egress") {
		t.Errorf("want each refused host once, no allowed one, and no server flag:\n%s", text)
	}
	if logged.Len() != 0 {
		t.Errorf("records below the server's level reached its log: %s", logged.String())
	}
	for i := range maxSetupRefusals + 5 {
		refuse(fmt.Sprintf("h%d.invalid", i), 443, 403, "no --egress pattern allows it")
	}
	if text := r.explain(); !strings.Contains(text, "and 8 refusals of other hosts") {
		t.Errorf("past the bound: %s", text)
	}
	offline := &setupRefusals{profile: &profiles.Profile{Name: "off", File: "p.yaml", Line: 9}}
	if text := offline.explain(); !strings.Contains(text, `the setup has none, because egress.setup of profile "off" (p.yaml:9) names no host`) {
		t.Errorf("a setup without egress.setup: %q", text)
	}
}

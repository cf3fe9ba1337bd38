package egress

import (
	"bytes"
	"context"
	"crypto/x509"
	"log/slog"
	"net"
	"net/netip"
	"testing"
)

// proxyWith starts another session's proxy on the rig's cache with the
// roots roots and the trust trust, and returns its address.
func (rig *cacheRig) proxyWith(t *testing.T, roots *x509.CertPool, trust string) string {
	t.Helper()
	policy, err := ParsePolicy([]string{rig.host})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(Config{Policy: policy,
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		Inject: &Injection{Authority: rig.ca, Roots: roots, Trust: trust, Artefacts: &ArtefactCache{Cache: rig.cache, Hosts: policy}},
		Log:    slog.New(slog.NewJSONHandler(lockedWriter{&rig.mu, &rig.logs}, nil))}, "session-other-trust")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// An answer fetched by a session that trusts an extra CA (a profile's
// ca_bundle: here the only root the upstream's certificate chains to,
// as behind a TLS-inspecting proxy) is never served to a session that
// does not trust it, nor to one trusting another extra CA; sessions of
// the same trust share it; no request spells another trust's key.
func TestCacheKeepsEachTrustApart(t *testing.T) {
	rig := newCacheRig(t, nil)
	upstreamOnly := x509.NewCertPool()
	upstreamOnly.AddCert(rig.upstream.Certificate())
	rig.proxies[0] = rig.proxyWith(t, upstreamOnly, "profile-ca")
	rig.proxies[1] = rig.proxyWith(t, x509.NewCertPool(), "") // trusts nothing the upstream has
	_, how, body := rig.get(t, 0, zipPath)
	rig.waitEntries(t, 1)
	if how != "miss" || !bytes.Equal(body, artefactBody(zipPath)) {
		t.Fatalf("the first download: %s", how)
	}
	status, how, body := rig.get(t, 1, zipPath)
	if how == "hit" || status == 200 || bytes.Contains(body, []byte(zipPath)) {
		t.Fatalf("a session without the extra CA got %d %q with the artefact: %v", status, how, bytes.Contains(body, []byte(zipPath)))
	}
	if st, how, _ := rig.get(t, 1, zipPath+"?x#trust%20profile-ca"); how == "hit" || st == 200 {
		t.Errorf("a crafted query reached another trust's entry: %d %s", st, how)
	}
	// Another session of the same trust shares it; one of another extra
	// CA, which also verifies the upstream, has its own entry.
	rig.proxies[1] = rig.proxyWith(t, upstreamOnly, "profile-ca")
	if _, how, _ := rig.get(t, 1, zipPath); how != "hit" {
		t.Errorf("a session of the same trust: %s, want a hit", how)
	}
	rig.proxies[1] = rig.proxyWith(t, upstreamOnly, "another-ca")
	if _, how, _ := rig.get(t, 1, zipPath); how != "miss" {
		t.Errorf("a session of another trust: %s, want a miss", how)
	}
	if n := rig.upstreamSaw(zipPath); n != 2 {
		t.Errorf("the upstream saw %d requests, want 2 (one per trust that verified it)", n)
	}
}

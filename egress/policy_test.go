package egress

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestParsePolicyRefusesBadPatternsByName(t *testing.T) {
	for _, bad := range []string{"", " ", "*.com", "*.10.0.0.1", "host:0", "host:70000", "host:x", "a..b", "bad/host",
		"2130706433", "0x7f.1", "0177.0.0.1", "127.1", "[fe80::1%eth0]:80", strings.Repeat("a", 64) + ".com"} {
		if _, err := ParsePolicy([]string{bad}); err == nil || !strings.Contains(err.Error(), "--egress") {
			t.Errorf("%q: err %v; want a refusal naming --egress", bad, err)
		}
	}
}

func TestPolicyMatch(t *testing.T) {
	p, err := ParsePolicy([]string{"pypi.org", "*.example.com", "localhost:11434", "10.0.0.5:8080", "[::1]:9000", "Files.Example.COM:8443"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host     string
		port     int
		want     string
		explicit bool
	}{
		{"pypi.org", 443, "pypi.org", false},
		{"pypi.org", 80, "pypi.org", false},
		{"pypi.org", 22, "", false},
		{"evil-pypi.org", 443, "", false},
		{"pypi.org.evil.net", 443, "", false},
		{"a.example.com", 443, "*.example.com", false},
		{"a.b.example.com", 80, "*.example.com", false},
		{"example.com", 443, "", false},
		{"notexample.com", 443, "", false},
		{"localhost", 11434, "localhost:11434", true},
		{"localhost", 443, "", false},
		{"10.0.0.5", 8080, "10.0.0.5:8080", true},
		{"::1", 9000, "[::1]:9000", true},
		{"files.example.com", 8443, "Files.Example.COM:8443", true},
		{"files.example.com", 443, "*.example.com", false},
	}
	for _, c := range cases {
		r, ok := p.Match(c.host, c.port)
		if ok != (c.want != "") || r.Pattern != c.want || (ok && r.Explicit() != c.explicit) {
			t.Errorf("Match(%s, %d) = %q explicit %v, %v; want %q explicit %v", c.host, c.port, r.Pattern, r.Explicit(), ok, c.want, c.explicit)
		}
	}
}

func TestNormalizeReadsEveryAddressForm(t *testing.T) {
	for in, want := range map[string]string{
		"LOCALHOST.": "localhost", "[::ffff:127.0.0.1]": "127.0.0.1", "::ffff:7f00:1": "127.0.0.1",
		"[::]": "::", "0:0:0:0:0:0:0:1": "::1",
	} {
		got, _, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"2130706433", "0x7f000001", "017700000001", "127.1", "0x7f.0.0.1", "127.000.000.001", "1.2.3.04"} {
		if got, literal, err := Normalize(bad); err == nil && !literal {
			t.Errorf("Normalize(%q) = %q, a name; want it refused as a non-standard address", bad, got)
		}
	}
}

func TestPublicRefusesEveryNonPublicAddress(t *testing.T) {
	// own stands for this machine's networks (ownAddrs reads the real ones).
	own := func(a netip.Addr) bool { return a == netip.MustParseAddr("198.51.100.7") }
	for _, s := range []string{"127.0.0.1", "127.8.9.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"fe80::1", "fd00::1", "0.0.0.0", "::", "100.64.0.1", "224.0.0.1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
		"64:ff9b::7f00:1", "2002:7f00:1::", "2001:0:7f00:1::", "240.0.0.1", "255.255.255.255", "198.51.100.7", "192.0.0.8"} {
		if ok, why := Public(netip.MustParseAddr(s), own); ok || why == "" {
			t.Errorf("Public(%s) = %v %q; want refused with a reason", s, ok, why)
		}
	}
	for _, s := range []string{"1.1.1.1", "151.101.0.223", "2606:4700::1111", "203.0.113.80"} {
		if ok, why := Public(netip.MustParseAddr(s), own); !ok {
			t.Errorf("Public(%s) refused: %s", s, why)
		}
	}
}

// This machine's own addresses, and its neighbours on the networks of its
// interfaces, are never public.
func TestOwnAddrsCoversThisMachinesNetworks(t *testing.T) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var o ownAddrs
	checked := 0
	for _, ia := range ifAddrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		a, _ := netip.AddrFromSlice(n.IP)
		if !o.has(a) {
			t.Errorf("own address %s not covered", a)
		}
		if a.Unmap().Is4() && !a.IsLoopback() {
			neighbour := a.Unmap().As4()
			neighbour[3] ^= 1
			if ones, _ := n.Mask.Size(); ones <= 30 && !o.has(netip.AddrFrom4(neighbour)) {
				t.Errorf("neighbour %v of %s not covered", neighbour, n)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Skip("no IPv4 interface besides loopback")
	}
}

// Every IPv6 form that carries an IPv4 address is judged by the address
// it carries: loopback, private and special ones are refused naming the
// form and the address, public ones pass.
func TestPublicJudgesEmbeddedIPv4(t *testing.T) {
	t.Parallel()
	own := func(a netip.Addr) bool { return a == netip.MustParseAddr("198.51.100.7") }
	tests := []struct {
		name, addr, want string // want: "" when public, else a word of the reason
	}{
		{"compatible loopback", "::127.0.0.5", "loopback"},
		{"compatible private", "::10.1.2.3", "private"},
		{"compatible own", "::198.51.100.7", "this machine"},
		{"compatible public", "::8.8.8.8", ""},
		{"mapped loopback", "::ffff:127.0.0.5", "loopback"},
		{"mapped public", "::ffff:8.8.8.8", ""},
		{"translated loopback", "::ffff:0:7f00:5", "IPv4-translated IPv6 address carrying 127.0.0.5, a loopback"},
		{"translated metadata", "::ffff:0:169.254.169.254", "link-local"},
		{"translated public", "::ffff:0:808:808", ""},
		{"nat64 loopback", "64:ff9b::7f00:5", "NAT64 address (64:ff9b::/96) carrying 127.0.0.5, a loopback"},
		{"nat64 private", "64:ff9b::c0a8:101", "private"},
		{"nat64 public", "64:ff9b::808:808", ""},
		{"nat64 local-use", "64:ff9b:1::808:808", "special-purpose"},
		{"6to4 loopback", "2002:7f00:5::1", "6to4 address (2002::/16) carrying 127.0.0.5, a loopback"},
		{"6to4 private", "2002:ac10:1::1", "private"},
		{"6to4 public", "2002:808:808::1", ""},
		{"teredo client loopback", "2001:0:808:808:0:0:80ff:fffa", "client (2001::/32) carrying 127.0.0.5, a loopback"},
		{"teredo client private", "2001:0:808:808:0:0:f5fe:fefc", "carrying 10.1.1.3, a private"},
		{"teredo server private", "2001:0:a01:103:0:0:f7f7:f7f7", "server (2001::/32) carrying 10.1.1.3"},
		{"teredo public", "2001:0:808:808:0:0:f7f7:f7f7", ""},
		{"compatible unspecified", "::", "unspecified"},
		{"loopback ::1", "::1", "a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := Public(netip.MustParseAddr(tt.addr), own)
			if tt.want == "" && !ok {
				t.Errorf("Public(%s) refused: %s", tt.addr, why)
			}
			if tt.want != "" && (ok || !strings.Contains(why, tt.want)) {
				t.Errorf("Public(%s) = %v %q; want refused saying %q", tt.addr, ok, why, tt.want)
			}
		})
	}
}

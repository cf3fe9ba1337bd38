package integration

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReliabilityEdges tries, through the real binary and Podman, the
// promises at the edges of a session that a hostile web page or model
// once broke: the egress proxy's address check against every IPv6 form
// that carries an IPv4 address.
func TestReliabilityEdges(t *testing.T) {
	t.Run("egress embedded IPv4", func(t *testing.T) {
		own := ownIPv4(t)
		ownV6 := netip.AddrFrom16(netip.MustParseAddr(own).As16()) // ::ffff:own, then made compatible below
		b := ownV6.As16()
		b[10], b[11] = 0, 0
		names := []struct{ name, addr, want string }{
			{"compat.wink.test", "::127.0.0.5", "loopback"},
			{"compat-own.wink.test", netip.AddrFrom16(b).String(), "of this machine"},
			{"translated.wink.test", "::ffff:0:7f00:5", "loopback"},
			{"mapped.wink.test", "::ffff:127.0.0.5", "loopback"},
			{"nat64.wink.test", "64:ff9b::a9fe:a9fe", "link-local"},
			{"nat64-local.wink.test", "64:ff9b:1::7f00:5", "special-purpose"},
			{"sixtofour.wink.test", "2002:7f00:5::1", "loopback"},
			{"teredo.wink.test", "2001:0:808:808::80ff:fffa", "loopback"},
		}
		var hosts strings.Builder
		for _, n := range names {
			fmt.Fprintf(&hosts, "%s %s\n", n.addr, n.name)
		}
		file := filepath.Join(t.TempDir(), "hosts")
		if err := os.WriteFile(file, []byte(hosts.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		p := start(t, startOptions{image: pythonImage, hosts: file, args: []string{"--warm", "0", "--disk-limit", "0", "--egress", "*.wink.test"}})
		tried, broken := 0, 0
		for _, n := range names {
			for _, request := range []string{
				"GET http://" + n.name + "/ HTTP/1.1\r\nHost: " + n.name + "\r\n\r\n",
				"CONNECT " + n.name + ":443 HTTP/1.1\r\n\r\n",
			} {
				tried++
				out := rawProxy(t, p, request)
				if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, n.want) || !strings.Contains(out, "carrying") && !strings.Contains(out, "special-purpose") && n.name != "mapped.wink.test" {
					broken++
					t.Errorf("%s resolving to %s: %q; want a 403 saying %q", strings.Fields(request)[0], n.addr, out, n.want)
				}
			}
		}
		recordPromise(promiseFigure{Class: "egress: names that resolve to IPv6 forms carrying a loopback, private, link-local or own IPv4 address (compatible, mapped, translated, NAT64, 6to4, Teredo), by GET and CONNECT",
			Tried: tried, Broken: broken, Measured: fmt.Sprintf("%d of %d refused with a 403 naming the form and the IPv4 address it carries", tried-broken, tried)})
	})
}

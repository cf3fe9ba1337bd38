package egress

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// specialRanges are addresses that are not the public internet, beyond
// what netip's predicates name: "this network", shared (carrier-grade NAT)
// space, protocol assignments, benchmarking, reserved, the local-use IPv6
// translation prefix (where the IPv4 address sits depends on the local
// network's choice of prefix length, so it is refused whole) and the
// discard prefix. The IPv6 forms that embed an IPv4 address are judged by
// that address (see embeddedIPv4). The documentation ranges are not among
// them: they route nowhere unless a network is set up to use them (some
// test networks serve their package registries there), and a machine's
// own network is refused by the check of its interfaces whatever its range.
var specialRanges = mustPrefixes(
	"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4",
	"64:ff9b:1::/48", "100::/64",
)

// IPv6 prefixes whose addresses carry an IPv4 address.
var (
	compatiblePrefix = netip.MustParsePrefix("::/96")           // IPv4-compatible, ::a.b.c.d (deprecated)
	translatedPrefix = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated, ::ffff:0:a.b.c.d (RFC 2765)
	nat64Prefix      = netip.MustParsePrefix("64:ff9b::/96")    // NAT64's well-known prefix (RFC 6052)
	sixToFourPrefix  = netip.MustParsePrefix("2002::/16")       // 6to4, 2002:AABB:CCDD::/48 (RFC 3056)
	teredoPrefix     = netip.MustParsePrefix("2001::/32")       // Teredo: the server's address, then the client's, inverted (RFC 4380)
)

// embedded is an IPv4 address an IPv6 address carries, and the form that
// carries it.
type embedded struct {
	v4   netip.Addr
	form string
}

// embeddedIPv4 returns the IPv4 addresses a carries, in every form that
// embeds or tunnels to one (IPv4-mapped addresses are unmapped before);
// none for any other address.
func embeddedIPv4(a netip.Addr) []embedded {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(at int) netip.Addr { return netip.AddrFrom4([4]byte(b[at : at+4])) }
	switch {
	case compatiblePrefix.Contains(a):
		return []embedded{{v4(12), "an IPv4-compatible IPv6 address"}}
	case translatedPrefix.Contains(a):
		return []embedded{{v4(12), "an IPv4-translated IPv6 address"}}
	case nat64Prefix.Contains(a):
		return []embedded{{v4(12), "a NAT64 address (64:ff9b::/96)"}}
	case sixToFourPrefix.Contains(a):
		return []embedded{{v4(2), "a 6to4 address (2002::/16)"}}
	case teredoPrefix.Contains(a):
		client := [4]byte(b[12:16])
		for i := range client {
			client[i] ^= 0xff
		}
		return []embedded{{netip.AddrFrom4(client), "a Teredo address's client (2001::/32)"}, {v4(4), "a Teredo address's server (2001::/32)"}}
	}
	return nil
}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Public says whether a is an address of the public internet: not
// loopback, private, link-local, multicast, unspecified or special, not on
// this machine or its local networks (own), and, for an IPv6 address that
// carries an IPv4 address (compatible, mapped, translated, NAT64, 6to4,
// Teredo), carrying only public ones; when not, it says why.
func Public(a netip.Addr, own func(netip.Addr) bool) (bool, string) {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return false, "not an address"
	case a.IsLoopback():
		return false, "a loopback address"
	case a.IsPrivate():
		return false, "a private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return false, "a link-local address (where metadata services live)"
	case a.IsUnspecified():
		return false, "the unspecified address"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return false, "a multicast address"
	case !a.IsGlobalUnicast():
		return false, "not a global unicast address"
	}
	// An address that carries an IPv4 address reaches that address (through
	// a translator, a tunnel or the kernel itself): it is judged as it.
	for _, e := range embeddedIPv4(a) {
		if ok, reason := Public(e.v4, own); !ok {
			return false, fmt.Sprintf("%s carrying %s, %s", e.form, e.v4, reason)
		}
	}
	for _, p := range specialRanges {
		if p.Contains(a) {
			return false, "a special-purpose address (" + p.String() + ")"
		}
	}
	if own != nil && own(a) {
		return false, "an address of this machine or of a network it is on"
	}
	return true, ""
}

// ownAddrs answers whether an address is on one of the networks of this
// machine's interfaces (its own addresses and its neighbours'), reading
// them again at most every ownAddrsTTL.
type ownAddrs struct {
	mu       sync.Mutex
	read     time.Time
	prefixes []netip.Prefix
}

const ownAddrsTTL = 30 * time.Second

func (o *ownAddrs) has(a netip.Addr) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.read.IsZero() || time.Since(o.read) > ownAddrsTTL {
		o.prefixes = o.prefixes[:0]
		o.read = time.Now()
		if ifAddrs, err := net.InterfaceAddrs(); err == nil {
			for _, ia := range ifAddrs {
				n, ok := ia.(*net.IPNet)
				if !ok {
					continue
				}
				x, ok := netip.AddrFromSlice(n.IP)
				if !ok {
					continue
				}
				bits, _ := n.Mask.Size()
				if x.Unmap().Is4() && bits > 32 {
					bits -= 96
				}
				if p, err := x.Unmap().Prefix(bits); err == nil {
					o.prefixes = append(o.prefixes, p)
				}
			}
		}
	}
	a = a.Unmap()
	for _, p := range o.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

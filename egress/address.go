package egress

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// specialRanges are addresses that are not the public internet, beyond
// what netip's predicates name: "this network", shared (carrier-grade NAT)
// space, protocol assignments, benchmarking, reserved, and the IPv6
// prefixes that embed an IPv4 address or tunnel to one (NAT64, 6to4,
// Teredo). The documentation ranges are not among them: they route nowhere
// unless a network is set up to use them (some test networks serve their
// package registries there), and a machine's own network is refused by
// the check of its interfaces whatever its range.
var specialRanges = mustPrefixes(
	"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4",
	"64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32", "100::/64",
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Public says whether a is an address of the public internet: not
// loopback, private, link-local, multicast, unspecified or special, and
// not on this machine or its local networks (own).
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

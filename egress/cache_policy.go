package egress

import "fmt"

// ParseCachePolicy parses --egress-cache patterns (or a profile's
// egress_cache): host patterns as --egress takes them, on port 443 unless
// they name one, since only intercepted HTTPS is cached.
func ParseCachePolicy(patterns []string) (Policy, error) {
	p, err := ParsePolicy(patterns)
	if err != nil {
		return Policy{}, fmt.Errorf("--egress-cache%s", err.Error()[len("--egress"):])
	}
	for i := range p.rules {
		if !p.rules[i].PortGiven {
			p.rules[i].Ports = []int{443}
		}
	}
	return p, nil
}

// Uncovered returns the first pattern of cache that no rule of allow
// covers entirely (every host and port it names), or "".
func Uncovered(cache, allow Policy) string {
	for _, c := range cache.rules {
		for _, port := range c.Ports {
			if !covered(c, port, allow) {
				return c.Pattern
			}
		}
	}
	return ""
}

func covered(c Rule, port int, allow Policy) bool {
	for _, a := range allow.rules {
		if !contains(a.Ports, port) {
			continue
		}
		switch {
		case !c.Wildcard && matchRule(a, c.Host):
			return true
		case c.Wildcard && a.Wildcard && (a.Host == c.Host || len(c.Host) > len(a.Host) && matchRule(a, c.Host)):
			return true
		}
	}
	return false
}

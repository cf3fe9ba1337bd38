// Package egress is the server's side of a workspace's only way out: an
// HTTP proxy, reached through the agent's tunnel (see wire.ProxyPort), that
// lets a container's connections through to the hosts an allowlist names,
// resolves them here, and never to this machine's own or private addresses
// unless a pattern names that host and port explicitly.
package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPorts are the ports a pattern without one allows.
var DefaultPorts = []int{443, 80}

// Rule is one allowlist pattern: a host name, a "*.domain" wildcard or an
// IP address, with the ports it allows.
type Rule struct {
	// Pattern is the rule as the user wrote it.
	Pattern string
	// Host is the lower-case name, the domain after "*." for a wildcard,
	// or the address in its canonical form.
	Host     string
	Wildcard bool
	Ports    []int
	// PortGiven says the pattern names its port: with an exact host, that
	// lets it reach private and loopback addresses on purpose.
	PortGiven bool
	// Source says who allowed the rule (see Policy.From); "" when unsaid.
	Source string
}

// Explicit says whether the rule names one host and one port, which is
// what it takes to reach a private or loopback address.
func (r Rule) Explicit() bool { return !r.Wildcard && r.PortGiven }

// Policy is an allowlist. The zero Policy allows nothing.
type Policy struct{ rules []Rule }

// ParsePolicy parses patterns, naming the first bad one and why.
func ParsePolicy(patterns []string) (Policy, error) {
	var p Policy
	for _, pat := range patterns {
		r, err := parseRule(pat)
		if err != nil {
			return Policy{}, fmt.Errorf("--egress %q: %w", pat, err)
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// Empty says whether the policy allows nothing.
func (p Policy) Empty() bool { return len(p.rules) == 0 }

// Patterns returns the patterns as the user wrote them.
func (p Policy) Patterns() []string {
	out := make([]string, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.Pattern
	}
	return out
}

// From returns the policy with every rule's Source set to source.
func (p Policy) From(source string) Policy {
	out := Policy{rules: append([]Rule(nil), p.rules...)}
	for i := range out.rules {
		out.rules[i].Source = source
	}
	return out
}

// Join returns the rules of p, then those of q.
func (p Policy) Join(q Policy) Policy {
	return Policy{rules: append(append([]Rule(nil), p.rules...), q.rules...)}
}

// With returns the policy with one more rule (added for a session).
func (p Policy) With(r Rule) Policy {
	return Policy{rules: append(append([]Rule(nil), p.rules...), r)}
}

// Match returns the rule that allows host (normalised by Normalize) on
// port; an exact rule wins over a wildcard.
func (p Policy) Match(host string, port int) (Rule, bool) {
	return p.matchSkipping(host, port, nil)
}

// matchSkipping is Match over the rules skip does not exclude (nil: all).
func (p Policy) matchSkipping(host string, port int, skip func(Rule) bool) (Rule, bool) {
	var found *Rule
	for i, r := range p.rules {
		if !contains(r.Ports, port) || skip != nil && skip(r) {
			continue
		}
		switch {
		case !r.Wildcard && r.Host == host:
			if r.Explicit() {
				return r, true
			}
			found = &p.rules[i]
		case r.Wildcard && strings.HasSuffix(host, "."+r.Host) && found == nil:
			found = &p.rules[i]
		}
	}
	if found == nil {
		return Rule{}, false
	}
	return *found, true
}

func contains(ports []int, port int) bool {
	for _, p := range ports {
		if p == port {
			return true
		}
	}
	return false
}

func parseRule(pat string) (Rule, error) {
	r := Rule{Pattern: pat, Ports: DefaultPorts}
	host := strings.TrimSpace(pat)
	if host == "" {
		return r, fmt.Errorf("empty pattern")
	}
	if h, port, ok := splitPort(host); ok {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return r, fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
		host, r.Ports, r.PortGiven = h, []int{n}, true
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		host, r.Wildcard = rest, true
	}
	norm, literal, err := Normalize(host)
	if err != nil {
		return r, err
	}
	if literal && r.Wildcard {
		return r, fmt.Errorf("a wildcard needs a domain name, not an address")
	}
	if r.Wildcard && !strings.Contains(norm, ".") {
		return r, fmt.Errorf("a wildcard needs a domain with a dot, like *.example.com, not *.%s", norm)
	}
	r.Host = norm
	return r, nil
}

// splitPort splits "host:port" and "[v6]:port"; a bare IPv6 address has no port.
func splitPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return s, "", false
		}
		if rest := s[end+1:]; strings.HasPrefix(rest, ":") {
			return s[1:end], rest[1:], true
		}
		return s[1:end], "", false
	}
	if strings.Count(s, ":") != 1 {
		return s, "", false
	}
	i := strings.LastIndex(s, ":")
	return s[:i], s[i+1:], true
}

// Normalize returns host as rules compare it: lower case, without a
// trailing dot, an address in its canonical form (literal true). A name
// that only some resolvers read as an address ("2130706433", "0x7f.1",
// "0177.0.0.1") is refused rather than guessed at.
func Normalize(host string) (norm string, literal bool, err error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" {
		return "", false, fmt.Errorf("empty host name")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", false, fmt.Errorf("an address with a zone (%s) cannot be allowed", h)
		}
		return a.Unmap().String(), true, nil
	}
	if len(h) > 253 {
		return "", false, fmt.Errorf("host name longer than 253 characters")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", false, fmt.Errorf("host name %q has an empty label or one over 63 characters", h)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false, fmt.Errorf("host name %q has the character %q; names are letters, digits, '-' and '.'", h, c)
			}
		}
	}
	if numeric(labels[len(labels)-1]) {
		return "", false, fmt.Errorf("%q reads as an address in a non-standard form; write the address as a.b.c.d", h)
	}
	return h, false, nil
}

// numeric says whether a label is a number in decimal, octal or hex, as
// inet_aton would read it: no top-level domain is.
func numeric(label string) bool {
	if rest, ok := strings.CutPrefix(label, "0x"); ok {
		_, err := strconv.ParseUint(rest, 16, 64)
		return err == nil || rest == ""
	}
	_, err := strconv.ParseUint(label, 10, 64)
	return err == nil
}

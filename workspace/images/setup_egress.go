package images

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// A setup's egress proxy answers a host it refuses with a 403 whose text
// says why, in the profile's terms (SetupWording), but package managers
// and curl show only the status ("CONNECT tunnel failed, response 403"),
// so the reason would reach no one. The proxy tells the setup of each
// refusal (egress.Config.OnRefusal), and the error of a command that fails
// says which hosts were refused, why, and how to allow them.

// maxSetupRefusals bounds the refusals a setup keeps (each host and port
// once); past it, they are only counted.
const maxSetupRefusals = 16

// SetupRefusals are the refusals of one setup's egress proxy. It is safe
// for concurrent use.
type SetupRefusals struct {
	profile *profiles.Profile
	mu      sync.Mutex
	total   int
	kept    []egress.Refusal
	dropped int // refusals of hosts past the kept ones
}

// NewSetupRefusals returns the empty record of a setup of p.
func NewSetupRefusals(p *profiles.Profile) *SetupRefusals {
	return &SetupRefusals{profile: p}
}

// Note keeps f, once for each host and port; it is the setup proxy's
// egress.Config.OnRefusal.
func (r *SetupRefusals) Note(f egress.Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	for _, k := range r.kept {
		if k.Host == f.Host && k.Port == f.Port {
			return
		}
	}
	if len(r.kept) < maxSetupRefusals {
		r.kept = append(r.kept, f)
	} else {
		r.dropped++
	}
}

// Explain describes the setup's refusals so far, each host and port
// once: "" when there were none. A setup whose profile names no host has
// no proxy and no network at all, which it says instead.
func (r *SetupRefusals) Explain() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.profile.Egress.Setup) == 0 && r.profile.Build != nil {
		return "If a step needed the network: the build has none, because wink-mcp was started without --egress; ask the user for the hosts it needs.\n"
	}
	if len(r.profile.Egress.Setup) == 0 {
		return fmt.Sprintf("If the command needed the network: the setup has none, because egress.setup of %s names no host; add the hosts it needs there.\n",
			ProfileAt(r.profile))
	}
	if r.total == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The setup's egress proxy refused %d connection(s) (tools show such a refusal as a 403 or a failed CONNECT):\n", r.total)
	for _, f := range r.kept {
		what := "a connection"
		if f.Host != "" {
			what = net.JoinHostPort(f.Host, strconv.Itoa(f.Port))
		}
		fmt.Fprintf(&b, "- %s: %s.", what, f.Reason)
		if f.Remedy != "" {
			fmt.Fprintf(&b, " %s", f.Remedy)
		}
		b.WriteString("\n")
	}
	if r.dropped > 0 {
		fmt.Fprintf(&b, "- and %d refusals of other hosts\n", r.dropped)
	}
	return b.String()
}

// SetupWording is how the refusals of p's setup proxy speak: of
// egress.setup, which alone opens the setup's network, not --egress.
// A project's build (p.Build) allows the server's --egress, and says so.
func SetupWording(p *profiles.Profile) egress.Wording {
	if p.Build != nil {
		return egress.Wording{Patterns: "--egress", Allow: func(pattern string) string {
			return fmt.Sprintf("If the build of %s needs it, ask the user to start wink-mcp with --egress %s.", p.Build.Found, pattern)
		}}
	}
	return egress.Wording{Patterns: "egress.setup", Allow: func(pattern string) string {
		return fmt.Sprintf("If the setup needs it, add %q to egress.setup of %s; sessions reach it only if egress.session names it too.", pattern, ProfileAt(p))
	}}
}

// SessionWording is how the refusals of the proxy of a session under p,
// whose egress.session adds patterns to --egress, speak: of both.
func SessionWording(p *profiles.Profile) egress.Wording {
	return egress.Wording{Patterns: "--egress or egress.session", Allow: func(pattern string) string {
		return fmt.Sprintf("Ask the user to start wink-mcp with --egress %s, or to add %q to egress.session of %s, if this host is needed.", pattern, pattern, ProfileAt(p))
	}}
}

// ProfileAt names p and where it is written.
func ProfileAt(p *profiles.Profile) string {
	return fmt.Sprintf("profile %q (%s:%d)", p.Name, p.File, p.Line)
}

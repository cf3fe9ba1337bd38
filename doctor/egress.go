package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/wire"
)

// egressReachTimeout bounds checking one allowed host.
const egressReachTimeout = 10 * time.Second

// egress says whether the workspace has a way out and, when it has, checks
// each host the allowlist names as the proxy would (resolved here, refused
// when private unless named with its port) and connects to it once.
// Wildcards name no host to try. A Pod has a network device: the line
// says first whether the policy that cuts it off holds (podNetwork).
func (d *doctor) egress(ctx context.Context) Result {
	if !d.pods() {
		return d.egressProxy(ctx)
	}
	r := d.podNetwork(ctx)
	if !d.cfg.EgressOn() || r.Status == Fail {
		return r
	}
	proxy := d.egressProxy(ctx)
	r.Detail += "; egress " + proxy.Detail
	if proxy.Status > r.Status {
		r.Status, r.Fix = proxy.Status, proxy.Fix
	}
	return r
}

// egressProxy is the egress line of an engine whose containers have no
// network device: what the proxy lets out.
func (d *doctor) egressProxy(ctx context.Context) Result {
	if !d.cfg.EgressOn() {
		return Result{Status: OK, Detail: "off: the containers have no network at all (--egress allows hosts through a proxy); " + d.tunnelPath()}
	}
	policy, err := egress.ParsePolicy(d.cfg.Egress)
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(), Fix: "write each --egress pattern as name, *.domain or address, optionally :port"}
	}
	proxy := egress.NewSession(egress.Config{Policy: policy, MaxBytes: d.cfg.EgressMaxBytes}, "doctor")
	var reached, failed, wild []string
	for _, r := range policy.Rules() {
		if r.Wildcard {
			wild = append(wild, r.Pattern)
			continue
		}
		c, cancel := context.WithTimeout(ctx, egressReachTimeout)
		err := proxy.Reach(c, r.Host, r.Ports[0])
		cancel()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", r.Pattern, err))
			continue
		}
		reached = append(reached, r.Pattern)
	}
	detail := fmt.Sprintf("through the proxy only (cap %d bytes a session), %s; reached %s", d.cfg.EgressMaxBytes, d.tunnelPath(), orNone(reached))
	if len(wild) > 0 {
		detail += "; wildcards not tried: " + strings.Join(wild, ", ")
	}
	if d.cfg.EgressAsk {
		detail += "; other hosts are asked of the user, where the client supports elicitation"
	}
	if len(failed) > 0 {
		return Result{Status: Warn, Detail: detail + "; not reachable: " + strings.Join(failed, "; "),
			Fix: "check the name and this machine's network, or drop the pattern; a private or loopback host needs its port named (--egress host:port)"}
	}
	return Result{Status: OK, Detail: detail}
}

// tunnelPath says what the tunnel of egress and port previews rides.
func (d *doctor) tunnelPath() string {
	if d.cfg.Engine != nil && d.cfg.Engine.Service().TunnelSockets && !d.cfg.FilesOnEngineHost {
		return "the tunnel (egress, port previews) rides a socket of each container's, mounted read-only at " + wire.TunnelSocketDir
	}
	return "the tunnel (egress, port previews) rides the engine's exec streams (no socket: a Pod, or a Podman service that shares no files with this machine)"
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

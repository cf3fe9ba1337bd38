// Package hostguard holds the Host and Origin rules of wink-mcp's HTTP
// endpoints on this machine, the MCP endpoint and the port previews alike:
// a request must name the server by a loopback name, the address it
// listens on, or a name the user allowed (--allowed-host), and come from
// no web page, or from one on a loopback origin or an origin the user
// allowed (--allowed-origin). A hostile web page that finds the port, by
// DNS rebinding or a cross-site request, is refused.
package hostguard

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// loopbackNames are the hosts a local client uses.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// Rules are the Host names and Origins one endpoint accepts. The zero
// value accepts loopback names and origins only; Rules are safe for
// concurrent use once made.
type Rules struct {
	hosts   map[string]bool // allowed Host names, lowercase, without port
	origins map[string]bool // allowed Origins besides loopback ones, as scheme://host[:port]
}

// New returns the rules that accept loopback names and origins, the hosts
// and origins given (--allowed-host, --allowed-origin), and the host of
// each listen address (host:port) that is not a wildcard.
func New(hosts, origins, listenAddrs []string) Rules {
	r := Rules{hosts: map[string]bool{}, origins: map[string]bool{}}
	for _, h := range append(append([]string{}, loopbackNames...), hosts...) {
		r.hosts[strings.ToLower(h)] = true
	}
	for _, addr := range listenAddrs {
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && !isWildcard(host) {
			r.hosts[strings.ToLower(host)] = true // the address it listens on is a name clients may use
		}
	}
	for _, o := range origins {
		r.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return r
}

// Refusal is why a request was refused: a short reason for the log and a
// message for the client that names the flag that would allow it.
type Refusal struct {
	Reason, Message string
}

// Check returns why r refuses req, or nil when it accepts it.
func (r Rules) Check(req *http.Request) *Refusal {
	if !r.HostAllowed(req.Host) {
		return &Refusal{"host", "forbidden: the Host header is not an allowed name for this server (see --allowed-host)"}
	}
	if origin := req.Header.Get("Origin"); origin != "" && !r.OriginAllowed(origin) {
		return &Refusal{"origin", "forbidden: requests from this Origin are not allowed (see --allowed-origin)"}
	}
	return nil
}

// HostAllowed reports whether a Host header (host or host:port) names the
// server by an allowed name; an empty one never does.
func (r Rules) HostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	return host != "" && (r.hosts[host] || r.hosts == nil && isLoopbackName(host))
}

// OriginAllowed accepts http(s) origins on a loopback name, any port, and
// the origins configured; "null" and anything else are refused.
func (r Rules) OriginAllowed(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	if r.origins[strings.ToLower(u.Scheme+"://"+u.Host)] {
		return true
	}
	return isLoopbackName(strings.ToLower(u.Hostname()))
}

func isLoopbackName(host string) bool {
	for _, name := range loopbackNames {
		if host == name {
			return true
		}
	}
	return false
}

// IsLoopback reports whether a listen host only accepts local connections.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// isWildcard reports whether a listen host means every interface.
func isWildcard(host string) bool {
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return host == "" || (err == nil && ip.IsUnspecified())
}

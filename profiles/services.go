package profiles

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wink-mcp/wink-mcp/egress"

	"github.com/wink-mcp/wink-mcp/workspace/services"
)

// Service is a service a profile declares: workspace_service starts it by
// its name alone in a session of the profile (package services).
type Service struct {
	services.Declared
	// Line is where the file declares it.
	Line int
}

// serviceRef is a declared service's profile, checked once every
// profile is read.
type serviceRef struct {
	node             *yaml.Node
	profile, service string
	uses             string
}

// services reads a profile's services: mapping.
func (r *reader) services(n *yaml.Node, profile string) []Service {
	if n.Kind != yaml.MappingNode {
		r.fail(n, profile, "services", "must be a mapping of service names to services (profile, command, env, ports, ready)")
		return nil
	}
	var out []Service
	r.pairs(n, profile, func(name string, k, v *yaml.Node) {
		field := "services." + name
		if v.Kind != yaml.MappingNode {
			r.fail(v, profile, field, "must be a mapping (profile, command, env, ports, ready)")
			return
		}
		s := Service{Declared: services.Declared{Spec: services.Spec{Name: name, Profile: profile}}, Line: k.Line}
		profileNode := k
		r.pairs(v, profile, func(key string, k, v *yaml.Node) {
			sub := field + "." + key
			switch key {
			case "profile":
				s.Profile, _ = r.str(v, profile, sub)
				profileNode = v
			case "command":
				s.Command = r.strs(v, profile, sub, nil)
			case "env":
				s.Env = r.env(v, profile)
			case "ports":
				s.Ports = r.ports(v, profile, sub)
			case "ready":
				s.Ready = r.ready(v, profile, sub)
			case "user":
				s.User, _ = r.str(v, profile, sub)
			case "autostart":
				s.Autostart = r.boolean(v, profile, sub)
			case "depends_on":
				s.DependsOn = r.strs(v, profile, sub, nil)
			case "egress":
				s.Egress = r.strs(v, profile, sub, func(p string, item *yaml.Node) (string, bool) {
					if _, err := egress.ParsePolicy([]string{p}); err != nil {
						r.fail(item, profile, sub, "%v", err)
						return "", false
					}
					return p, true
				})
			default:
				r.fail(k, profile, sub, "unknown field; a service has profile, command, env, ports, ready, user, autostart, depends_on and egress")
			}
		})
		if err := s.Spec.Check(); err != nil {
			r.fail(k, profile, field, "%v", err)
			return
		}
		r.serviceRefs = append(r.serviceRefs, serviceRef{node: profileNode, profile: profile, service: name, uses: s.Profile})
		out = append(out, s)
	})
	if len(out) > services.MaxServices {
		r.fail(n, profile, "services", "%d services; at most %d", len(out), services.MaxServices)
	}
	decls := make([]services.Declared, len(out))
	for i, s := range out {
		decls[i] = s.Declared
	}
	if _, err := services.Order(decls); err != nil {
		field, why, _ := strings.Cut(err.Error(), ": ")
		r.fail(n, profile, field, "%s", why)
	}
	return out
}

// ports reads a list of port numbers.
func (r *reader) ports(n *yaml.Node, profile, field string) []int {
	var out []int
	for i, s := range r.strs(n, profile, field, nil) {
		p, err := strconv.Atoi(s)
		if err != nil {
			r.fail(n, profile, fmt.Sprintf("%s[%d]", field, i), "%q is not a port number", s)
			continue
		}
		out = append(out, p)
	}
	return out
}

// ready reads a service's readiness check: port or command, and timeout.
func (r *reader) ready(n *yaml.Node, profile, field string) services.Ready {
	var ready services.Ready
	if n.Kind != yaml.MappingNode {
		r.fail(n, profile, field, "must be a mapping (port or command, and timeout)")
		return ready
	}
	r.pairs(n, profile, func(key string, k, v *yaml.Node) {
		sub := field + "." + key
		switch key {
		case "port":
			if s, ok := r.str(v, profile, sub); ok {
				p, err := strconv.Atoi(s)
				if err != nil {
					r.fail(v, profile, sub, "%q is not a port number", s)
				}
				ready.Port = p
			}
		case "command":
			ready.Command = r.strs(v, profile, sub, nil)
		case "timeout":
			if s, ok := r.str(v, profile, sub); ok {
				d, err := time.ParseDuration(s)
				if err != nil {
					r.fail(v, profile, sub, "%q is not a duration (such as 60s)", s)
				}
				ready.Timeout = d
			}
		default:
			r.fail(k, profile, sub, "unknown field; ready has port or command, and timeout")
		}
	})
	return ready
}

// checkServiceProfiles refuses a declared service whose profile the file
// does not define.
func (r *reader) checkServiceProfiles(f *File) {
	for _, ref := range r.serviceRefs {
		if f.Profiles[ref.uses] == nil && r.raw[ref.uses] == nil {
			r.fail(ref.node, ref.profile, "services."+ref.service+".profile", "names no profile of this file (%v)", f.Names())
		}
	}
}

// boolean reads true or false.
func (r *reader) boolean(n *yaml.Node, profile, field string) bool {
	s, ok := r.scalar(n, profile, field)
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	r.fail(n, profile, field, "%q is not true or false", s)
	return false
}

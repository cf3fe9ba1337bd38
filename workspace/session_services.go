package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/jobs"
	"github.com/wink-mcp/wink-mcp/workspace/services"
)

// LabelServiceOf marks a service's container with the key of the
// workspace it serves; the rest of its labels are a session's, so the
// sweeps that find a dead server's containers find its services too.
const LabelServiceOf = "io.wink-mcp.service-of"

// errServicesOnPods refuses services on Kubernetes, where they are not built.
var errServicesOnPods = errors.New("services run beside workspaces on Podman only (--engine podman): with --engine kubernetes a service would be a Pod of its own, " +
	"with its own network policy and tunnel, which is not built")

// newServices returns s's services room (package services):
// each service a session of its own, never in the manager's list, made,
// counted and ended through this session.
func newServices(s *Session) *services.Room {
	mk := serviceMaker{s: s}
	return services.New(services.Deps{
		Make: mk.make,
		Call: func(ctx context.Context, op string, args, result any) error {
			if _, err := s.ensureTunnel(ctx); err != nil { // the agent's listeners carry through the tunnel
				return err
			}
			return s.call(ctx, op, args, result, nil)
		},
		Declared: func() []services.Declared {
			s.mu.Lock()
			p := s.profile
			s.mu.Unlock()
			if p == nil {
				return nil
			}
			decls := make([]services.Declared, len(p.Services))
			for i, d := range p.Services {
				decls[i] = d.Declared
			}
			return decls
		},
		ProfileOf: func(image string) (string, error) { return composeProfile(s.m.cfg.Profiles, image) },
		Root:      Root,
		Log:       s.m.log,
		Session:   s.who.hash,
	})
}

// attachServices readies the workspace's container for its services
// before a call reaches it (services.Room.Attach): the ports of those that
// outlived an earlier container listen again, and the first container's
// declared autostart services start. A service's own container and a
// pooled one no session took have none.
func attachServices(ctx context.Context, s *Session) error {
	if s.serviceOf != "" || s.who.id() == "" {
		return nil
	}
	return s.services.Attach(ctx)
}

// serviceMaker makes the containers of one session's services.
type serviceMaker struct{ s *Session }

// make starts the container of the service spec: a session container's
// spec and hardening (no capabilities, the workspace's non-root user or
// the image's user spec.User, never root, its limits checked after
// creation, no network device), no host folders and no egress, counted in
// the principal's quotas as a container.
func (mk serviceMaker) make(ctx context.Context, spec services.Spec) (services.Container, error) {
	m := mk.s.m
	if m.eng.Service().Pods {
		return nil, errServicesOnPods
	}
	p, err := m.cfg.Profiles.Get(spec.Profile)
	if err != nil {
		return nil, errors.New("profile: " + err.Error())
	}
	user := ""
	if spec.User != "" {
		if user, err = mk.imageUser(ctx, spec, p); err != nil {
			return nil, err
		}
	}
	return mk.start(ctx, spec, p, user)
}

// start makes and starts the service's container as user (uid:gid, ""
// for the workspace's).
func (mk serviceMaker) start(ctx context.Context, spec services.Spec, p *profiles.Profile, user string) (serviceContainer, error) {
	s, m := mk.s, mk.s.m
	child := m.newSession(s.who.id()+"\x00service "+spec.Name, s.key+"-svc-"+spec.Name)
	child.principal, child.stdio, child.serviceOf, child.serviceUser = s.principal, s.stdio, s.key, user
	child.profileSwitch.setLocked(p)
	child.proxy = mk.proxy(spec, child.key) // its own allowlist alone, never the workspace's
	child.mounts.resolved = true            // no host folders
	if _, err := child.Start(ctx); err != nil {
		child.end(context.WithoutCancel(ctx))
		return serviceContainer{}, err
	}
	return serviceContainer{child}, nil
}

// proxy returns the egress proxy of a service's container: the service's
// own patterns alone (never the server's --egress or the profile's, no
// credentials, no ssh-agent, no one to ask), its bytes counted in the
// workspace's budget; nil (no egress) without patterns.
func (mk serviceMaker) proxy(spec services.Spec, key string) *egress.Session {
	if len(spec.Egress) == 0 {
		return nil
	}
	m := mk.s.m
	policy, err := egress.ParsePolicy(spec.Egress) // checked by Spec.Check
	if err != nil {
		m.log.Error("a service's egress patterns no longer parse", "service", spec.Name, "err", err)
		return nil
	}
	cfg := egress.Config{Policy: policy.From("service " + spec.Name + " (services." + spec.Name + ".egress)"),
		MaxBytes: m.cfg.EgressMaxBytes, MaxConns: m.cfg.EgressMaxConns, Meter: mk.s.meter, Log: m.log,
		Wording: egress.Wording{Patterns: "service " + spec.Name + "'s egress", Allow: func(pattern string) string {
			return "Ask the user to add " + pattern + " to the service's egress: list in the profiles file if it needs this host."
		}}}
	if m.egress != nil {
		cfg.Resolve = m.egress.Resolve
	}
	return egress.NewSession(cfg, key)
}

// serviceContainer is a service's container as package services sees it.
type serviceContainer struct{ s *Session }

func (c serviceContainer) StartJob(ctx context.Context, req jobs.Request) (wire.JobStartResult, error) {
	return c.s.jobs.StartJob(ctx, req)
}

func (c serviceContainer) JobStatus(ctx context.Context, id string) (wire.JobInfo, error) {
	return c.s.jobs.JobStatus(ctx, id)
}

func (c serviceContainer) JobOutput(ctx context.Context, req wire.JobOutputArgs) (wire.JobOutputResult, error) {
	return c.s.jobs.JobOutput(ctx, req)
}

func (c serviceContainer) Run(ctx context.Context, argv []string, timeout time.Duration) (int, string, error) {
	res, err := c.s.Exec(ctx, ExecRequest{Argv: argv, Timeout: timeout, Grace: time.Second, Capture: true, OutputLimit: readyOutputLimit})
	return res.ExitCode, strings.TrimSpace(res.Stdout + res.Stderr), err
}

// readyOutputLimit is how much of a readiness command's output a failed
// start quotes.
const readyOutputLimit = 300

func (c serviceContainer) Tunnel(ctx context.Context) (*yamux.Session, error) {
	return c.s.ensureTunnel(ctx)
}

func (c serviceContainer) Name() string { return c.s.name }

func (c serviceContainer) End(ctx context.Context) { c.s.end(ctx) }

// composeProfile names the profile a compose file's image means: the
// profile of that name, else the one profile whose image it is; a
// service's software comes from the server's profiles, never from an
// image a compose file names alone.
func composeProfile(all *profiles.File, image string) (string, error) {
	if all == nil {
		return "", fmt.Errorf("%q: the server has no profiles (--profiles): a service's software comes from a profile", image)
	}
	if p, err := all.Get(image); err == nil {
		return p.Name, nil
	}
	var names, matches []string
	for _, p := range all.All() {
		names = append(names, p.Name)
		if p.Image == image {
			matches = append(matches, p.Name)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("%q is neither a profile nor a profile's image (the profiles: %s): a service's software comes from a profile", image, strings.Join(names, ", "))
	}
	return "", fmt.Errorf("%q is the image of profiles %s: name one of them", image, strings.Join(matches, ", "))
}

// Package services runs a workspace's services: each a container of its
// own beside the workspace's (a database, a cache), made from a profile,
// with the workspace's hardening and no network device, its command run
// as a background job there (whose output pages back like a job's), a
// readiness check with a deadline, and its ports on the workspace's
// loopback. The workspace's agent listens on those ports and carries each
// connection over the tunnel the server holds; the server hands it to the
// service's agent only when the name and port are this workspace's own
// service's (Room.Listener). Services end with their workspace.
//
// A Room reaches its workspace only through its Deps, never by importing
// workspace.
package services

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/wire"
)

// Limits of one workspace's services and of what the model may ask.
const (
	// MaxServices is how many services one workspace may have at once.
	MaxServices = 4
	// MaxPorts is how many ports one service may serve.
	MaxPorts = 4
	// MinPort is the lowest port a service may serve: the workspace's
	// processes run without privileges, so its agent listens above the
	// privileged ports.
	MinPort = 1024
	// MaxArgs and MaxEnv bound a service's command and environment.
	MaxArgs = 64
	MaxEnv  = 32
	// DefaultReadyTimeout and MaxReadyTimeout bound the wait for a
	// service's readiness check.
	DefaultReadyTimeout = 60 * time.Second
	MaxReadyTimeout     = 5 * time.Minute
)

// Spec is a service as the model or a profile declares it.
type Spec struct {
	// Name is how the workspace names it: letters, digits and dashes.
	Name string
	// Profile is the profile whose image the service's container runs.
	Profile string
	// Command runs in the service's container, in the foreground.
	Command []string
	// Env is set for Command.
	Env map[string]string
	// Ports are the ports Command serves on the service's loopback, each
	// also on the workspace's.
	Ports []int
	// Ready is when the service is ready.
	Ready Ready
	// User, when set, is a user of the service's image (postgres) its
	// container runs as, instead of the workspace's; never root.
	User string
	// Egress is the service's own allowlist (host patterns, as --egress):
	// its connections through its own proxy reach these hosts only. Only
	// a profile (the operator's file) gives one: workspace_service and a
	// compose file cannot.
	Egress []string
}

// Ready is a service's readiness check: a port accepting a connection, or
// a command exiting 0, within Timeout.
type Ready struct {
	Port    int
	Command []string
	Timeout time.Duration
}

var (
	namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)
	envPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	userPattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
)

// Check says what is wrong with s, naming the field and the limit, and
// fills in the default timeout.
func (s *Spec) Check() error {
	if !namePattern.MatchString(s.Name) {
		return fmt.Errorf("name: %q is not a service name: 1 to 31 lowercase letters, digits and dashes, starting with a letter", s.Name)
	}
	if strings.TrimSpace(s.Profile) == "" {
		return fmt.Errorf("profile: is required: the profile whose image the service runs (its setup installs the software)")
	}
	if len(s.Command) == 0 || strings.TrimSpace(s.Command[0]) == "" {
		return fmt.Errorf("command: is required: the program and its arguments, run in the foreground")
	}
	if len(s.Command) > MaxArgs {
		return fmt.Errorf("command: has %d arguments; at most %d", len(s.Command), MaxArgs)
	}
	if len(s.Env) > MaxEnv {
		return fmt.Errorf("env: has %d variables; at most %d", len(s.Env), MaxEnv)
	}
	for k := range s.Env {
		if !envPattern.MatchString(k) {
			return fmt.Errorf("env: %q is not a variable name (letters, digits and _, not starting with a digit)", k)
		}
	}
	if s.User != "" && (!userPattern.MatchString(s.User) || s.User == "root") {
		return fmt.Errorf("user: %q is not a user a service may run as: a user name of its image (1 to 32 lowercase letters, digits, _ and -), not root", s.User)
	}
	if _, err := egress.ParsePolicy(s.Egress); len(s.Egress) > 0 && err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	if len(s.Ports) == 0 || len(s.Ports) > MaxPorts {
		return fmt.Errorf("ports: has %d ports; a service serves 1 to %d", len(s.Ports), MaxPorts)
	}
	for i, p := range s.Ports {
		if err := checkPort(fmt.Sprintf("ports[%d]", i), p); err != nil {
			return err
		}
		if slices.Contains(s.Ports[:i], p) {
			return fmt.Errorf("ports[%d]: %d is named twice", i, p)
		}
	}
	return s.Ready.check(s.Ports)
}

func checkPort(field string, p int) error {
	if p < MinPort || p > 65535 {
		return fmt.Errorf("%s: %d is outside %d-65535 (the workspace's processes have no privilege to listen below %d)", field, p, MinPort, MinPort)
	}
	if p == wire.ProxyPort {
		return fmt.Errorf("%s: %d is the workspace's egress proxy port; choose another", field, p)
	}
	return nil
}

func (r *Ready) check(ports []int) error {
	switch {
	case r.Port == 0 && len(r.Command) == 0:
		return fmt.Errorf("ready: needs port (a port that accepts a connection) or command (a command that exits 0)")
	case r.Port != 0 && len(r.Command) != 0:
		return fmt.Errorf("ready: takes port or command, not both")
	case r.Port != 0 && !slices.Contains(ports, r.Port):
		return fmt.Errorf("ready.port: %d is not one of the service's ports %v", r.Port, ports)
	case len(r.Command) > MaxArgs:
		return fmt.Errorf("ready.command: has %d arguments; at most %d", len(r.Command), MaxArgs)
	case len(r.Command) != 0 && strings.TrimSpace(r.Command[0]) == "":
		return fmt.Errorf("ready.command: the program is empty")
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultReadyTimeout
	}
	if r.Timeout < time.Second || r.Timeout > MaxReadyTimeout {
		return fmt.Errorf("ready.timeout_seconds: %s is outside 1 s to %s", r.Timeout, MaxReadyTimeout)
	}
	return nil
}

// NameOnly says s names a service and nothing else: Room.Start takes the
// rest from the workspace profile's declaration.
func (s *Spec) NameOnly() bool {
	return s.Profile == "" && len(s.Command) == 0 && len(s.Env) == 0 && len(s.Ports) == 0 && s.User == "" &&
		s.Ready.Port == 0 && len(s.Ready.Command) == 0 && s.Ready.Timeout == 0
}

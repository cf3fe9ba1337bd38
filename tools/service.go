package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/services"
)

// workspace_service's actions.
const (
	ServiceStart = "start"
	ServiceStop  = "stop"
	ServiceList  = "list"
	ServiceLogs  = "logs"
	// ServiceComposeUp starts a compose file's services.
	ServiceComposeUp = "compose_up"
)

// WorkspaceServiceParams are workspace_service's arguments.
type WorkspaceServiceParams struct {
	Action              string            `json:"action" jsonschema:"enum=start,enum=stop,enum=list,enum=logs,enum=compose_up" jsonschema_description:"start: make a service's container from a profile, run its command and wait for its readiness check; stop: end it and delete its data; list: the running services; logs: a page of a service's output, as job action=output pages a job's; compose_up: start the services of a compose file (compose_file), dependencies first."`
	ComposeFile         string            `json:"compose_file,omitempty" jsonschema:"maxLength=4096" jsonschema_description:"compose_up: the compose file, relative to /workspace (such as project/compose.yaml in a mounted folder); default: compose.yaml, compose.yml, docker-compose.yml or docker-compose.yaml in /workspace. Read: services with image (a profile's name or image), command, environment, ports (same number only), depends_on, healthcheck; any other key is refused, named."`
	Name                string            `json:"name,omitempty" jsonschema:"maxLength=31" jsonschema_description:"The service's name (lowercase letters, digits, dashes). Required except for list. start with a name alone starts the service the workspace's profile declares (list shows them)."`
	Profile             string            `json:"profile,omitempty" jsonschema:"maxLength=64" jsonschema_description:"start: the profile whose image the service runs (its setup installs the software, e.g. redis-server)."`
	Command             []string          `json:"command,omitempty" jsonschema:"maxItems=64" jsonschema_description:"start: the program and its arguments, run in the foreground in the service's container (e.g. [\"redis-server\", \"--port\", \"6379\"])."`
	Env                 map[string]string `json:"env,omitempty" jsonschema_description:"start: environment variables for the command (at most 32)."`
	User                string            `json:"user,omitempty" jsonschema:"maxLength=32" jsonschema_description:"start: a user of the profile's image (such as postgres) the service runs as, instead of the workspace's non-root user; never root."`
	Ports               []int             `json:"ports,omitempty" jsonschema:"maxItems=4" jsonschema_description:"start: the TCP ports (1024-65535) the command serves; each is also reachable at 127.0.0.1:PORT in the workspace."`
	ReadyPort           int               `json:"ready_port,omitempty" jsonschema:"minimum=1024,maximum=65535" jsonschema_description:"start: the service is ready when this port (one of ports) accepts a connection. Give this or ready_command."`
	ReadyCommand        []string          `json:"ready_command,omitempty" jsonschema:"maxItems=64" jsonschema_description:"start: the service is ready when this command, run in its container, exits 0. Give this or ready_port."`
	ReadyTimeoutSeconds int               `json:"ready_timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=300,default=60" jsonschema_description:"start: how long to wait for readiness; a service not ready by then is removed and reported with its last log lines."`
	Stream              string            `json:"stream,omitempty" jsonschema:"enum=stdout,enum=stderr,default=stdout" jsonschema_description:"logs: which stream."`
	Offset              int64             `json:"offset,omitempty" jsonschema:"minimum=0" jsonschema_description:"logs: the byte to start at; the result's next is where the following page starts."`
	Line                int64             `json:"line,omitempty" jsonschema:"minimum=0" jsonschema_description:"logs: start at this line (0-based) instead of offset."`
	Limit               int               `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1048576,default=32768" jsonschema_description:"logs: the most bytes to return."`
}

// Validate checks which arguments each action takes.
func (p *WorkspaceServiceParams) Validate() error {
	if p.Action == ServiceList || p.Action == ServiceComposeUp {
		if p.Name != "" {
			return fmt.Errorf("name: %s takes no name", p.Action)
		}
	} else if strings.TrimSpace(p.Name) == "" {
		return fmt.Errorf("name: is required when action is %s (workspace_service action=list shows the names)", p.Action)
	}
	type arg struct {
		name  string
		set   bool
		allow string
	}
	for _, a := range []arg{
		{"profile", p.Profile != "", ServiceStart}, {"command", len(p.Command) != 0, ServiceStart}, {"env", len(p.Env) != 0, ServiceStart},
		{"ports", len(p.Ports) != 0, ServiceStart}, {"user", p.User != "", ServiceStart}, {"ready_port", p.ReadyPort != 0, ServiceStart},
		{"ready_command", len(p.ReadyCommand) != 0, ServiceStart}, {"ready_timeout_seconds", p.ReadyTimeoutSeconds != 0, ServiceStart},
		{"stream", p.Stream != "", ServiceLogs}, {"offset", p.Offset != 0, ServiceLogs}, {"line", p.Line != 0, ServiceLogs},
		{"limit", p.Limit != 0, ServiceLogs}, {"compose_file", p.ComposeFile != "", ServiceComposeUp},
	} {
		if a.set && p.Action != a.allow {
			return fmt.Errorf("%s: only for action %s (this call is action %s)", a.name, a.allow, p.Action)
		}
	}
	if p.Action == ServiceLogs && p.Offset != 0 && p.Line != 0 {
		return fmt.Errorf("offset and line: give one of them, not both")
	}
	if spec := p.spec(); p.Action == ServiceStart && !spec.NameOnly() {
		return spec.Check() // a name alone starts the one the profile declares
	}
	return nil
}

// spec is the service a start asks for.
func (p *WorkspaceServiceParams) spec() services.Spec {
	return services.Spec{Name: p.Name, Profile: p.Profile, Command: p.Command, Env: p.Env, Ports: p.Ports, User: p.User,
		Ready: services.Ready{Port: p.ReadyPort, Command: p.ReadyCommand, Timeout: time.Duration(p.ReadyTimeoutSeconds) * time.Second}}
}

// ServiceView describes a service as the tool shows it.
type ServiceView struct {
	Name      string `json:"name" jsonschema_description:"The service's name."`
	Profile   string `json:"profile" jsonschema_description:"The profile its container runs."`
	User      string `json:"user,omitempty" jsonschema_description:"The image's user it runs as; absent: the workspace's."`
	Ports     []int  `json:"ports" jsonschema_description:"Its ports, each at 127.0.0.1:PORT in the workspace."`
	Container string `json:"container" jsonschema_description:"Its container's name."`
	Running   bool   `json:"running" jsonschema_description:"Its command still runs."`
	ExitCode  *int   `json:"exit_code,omitempty" jsonschema_description:"Once its command ended: its status."`
	ReadyMS   int64  `json:"ready_ms" jsonschema_description:"How long it took from start to ready."`
	Problem   string `json:"problem,omitempty" jsonschema_description:"list: why its state could not be read (its container went); stop it and start it again."`
	Declared  bool   `json:"declared,omitempty" jsonschema_description:"list: the workspace's profile declares it and it does not run; start it by its name alone."`
	Autostart bool   `json:"autostart,omitempty" jsonschema_description:"list: a declared service that starts with the workspace (before its first call runs); problem says why it did not."`
}

// WorkspaceServiceResult is workspace_service's result.
type WorkspaceServiceResult struct {
	Action   string        `json:"action" jsonschema_description:"The action performed."`
	Service  *ServiceView  `json:"service,omitempty" jsonschema_description:"start, stop: the service."`
	Services []ServiceView `json:"services,omitempty" jsonschema_description:"list: the running services; compose_up: the compose file's services that run."`
	Stream   string        `json:"stream,omitempty" jsonschema_description:"logs: the stream paged."`
	Data     string        `json:"data,omitempty" jsonschema_description:"logs: the page."`
	Offset   int64         `json:"offset,omitempty" jsonschema_description:"logs: the byte the page starts at."`
	Next     int64         `json:"next,omitempty" jsonschema_description:"logs: the offset of the next page; equal to total when the page reached the end so far."`
	Total    int64         `json:"total,omitempty" jsonschema_description:"logs: the stream's size so far."`
	Dropped  int64         `json:"dropped_bytes,omitempty" jsonschema_description:"logs: output that could not be kept because the service's disk was full."`
}

// Text says what the action did.
func (r WorkspaceServiceResult) Text() string {
	var b strings.Builder
	view := func(v ServiceView) {
		state := "running"
		switch {
		case v.Declared && v.Problem != "":
			state = "declared by the profile, did not start: " + v.Problem
		case v.Declared && v.Autostart:
			state = "declared by the profile, starts with the workspace, not running yet"
		case v.Declared:
			state = "declared by the profile, not running (start it by name)"
		case v.Problem != "":
			state = "not running: " + v.Problem
		case !v.Running:
			state = "not running"
			if v.ExitCode != nil {
				state = fmt.Sprintf("exited %d", *v.ExitCode)
			}
		}
		ports := make([]string, len(v.Ports))
		for i, p := range v.Ports {
			ports[i] = fmt.Sprintf("127.0.0.1:%d", p)
		}
		as := ""
		if v.User != "" {
			as = ", as " + v.User
		}
		fmt.Fprintf(&b, "%s (profile %s%s): %s, at %s in the workspace", v.Name, v.Profile, as, state, strings.Join(ports, ", "))
	}
	switch r.Action {
	case ServiceStart:
		view(*r.Service)
		fmt.Fprintf(&b, "; ready after %d ms", r.Service.ReadyMS)
	case ServiceStop:
		fmt.Fprintf(&b, "%s stopped; its container and data are gone", r.Service.Name)
	case ServiceList, ServiceComposeUp:
		if len(r.Services) == 0 {
			b.WriteString("no services")
		}
		for i, v := range r.Services {
			if i > 0 {
				b.WriteString("\n")
			}
			view(v)
		}
	case ServiceLogs:
		more := "the end so far"
		if r.Next < r.Total {
			more = fmt.Sprintf("more from offset %d", r.Next)
		}
		fmt.Fprintf(&b, "--- %s bytes %d-%d of %d (%s) ---\n%s", r.Stream, r.Offset, r.Next, r.Total, more, r.Data)
		if r.Dropped > 0 {
			fmt.Fprintf(&b, "\n(%d bytes of output were dropped: the service's disk was full)", r.Dropped)
		}
	}
	return b.String()
}

// Services is what workspace_service takes of a session's workspace.
type Services interface {
	// Start starts a service and waits until it is ready.
	Start(ctx context.Context, spec services.Spec) (services.Info, error)
	// Stop ends a service.
	Stop(ctx context.Context, name string) (services.Info, error)
	// List describes the running services.
	List(ctx context.Context) []services.Info
	// ComposeUp starts a compose file's services.
	ComposeUp(ctx context.Context, file string) ([]services.Info, error)
	// Logs pages a service's output.
	Logs(ctx context.Context, name string, page wire.JobOutputArgs) (wire.JobOutputResult, error)
}

func serviceView(in services.Info) *ServiceView {
	return &ServiceView{Name: in.Name, Profile: in.Profile, User: in.User, Ports: in.Ports, Container: in.Container, Running: in.Running,
		ExitCode: in.Exit, ReadyMS: in.ReadyIn.Milliseconds(), Declared: in.Declared, Autostart: in.Autostart, Problem: in.Problem}
}

// WorkspaceService returns the workspace_service tool.
func WorkspaceService(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[Services, WorkspaceServiceParams, WorkspaceServiceResult]{
		name:  "workspace_service",
		title: "Run a service beside the workspace",
		description: "Run a service (a database, a cache) in a container of its own beside the workspace, made from a profile whose " +
			"setup installs it, or one the workspace's profile declares (start it by its name alone; those it marks autostart start with " +
			"the workspace, before its first call, and list says why one did not). start runs its command and waits for its readiness check (a port accepting a connection, or a " +
			"command exiting 0); a service not ready in time is removed and reported with its last log lines. Each of its ports is " +
			"then reachable as raw TCP at 127.0.0.1:PORT inside the workspace, and from nowhere else: it has no network of its own " +
			"and sees neither the workspace's files nor other workspaces. logs pages its output as job action=output does; stop " +
			"ends it and deletes its data. Up to 4 services; they count in the server's quotas and end with the session; when the " +
			"workspace's container is made again (idle, podman_shell stop, a profile restart) they run on, with their data, at the same ports. A checkpoint holds the workspace's files only, never a " +
			"service's data.",
		annotations: annotate(false, true, false), // stop deletes the service's data
		handle:      runService,
	})
}

func runService(ctx context.Context, ws Services, p WorkspaceServiceParams) (WorkspaceServiceResult, error) {
	res := WorkspaceServiceResult{Action: p.Action}
	switch p.Action {
	case ServiceStart:
		in, err := ws.Start(ctx, p.spec())
		if err != nil {
			return res, err
		}
		res.Service = serviceView(in)
	case ServiceStop:
		in, err := ws.Stop(ctx, p.Name)
		if err != nil {
			return res, err
		}
		res.Service = serviceView(in)
	case ServiceComposeUp:
		infos, err := ws.ComposeUp(ctx, p.ComposeFile)
		if err != nil {
			return res, err
		}
		res.Services = []ServiceView{}
		for _, in := range infos {
			res.Services = append(res.Services, *serviceView(in))
		}
	case ServiceList:
		res.Services = []ServiceView{}
		for _, in := range ws.List(ctx) {
			res.Services = append(res.Services, *serviceView(in))
		}
	case ServiceLogs:
		limit := p.Limit
		if limit == 0 {
			limit = DefaultJobPage
		}
		res.Stream = p.Stream
		if res.Stream == "" {
			res.Stream = "stdout"
		}
		out, err := ws.Logs(ctx, p.Name, wire.JobOutputArgs{Stream: res.Stream, Offset: p.Offset, Line: p.Line, Limit: limit})
		if err != nil {
			return res, err
		}
		res.Data, res.Offset, res.Next, res.Total, res.Dropped = out.Chunk.Data, out.Chunk.Offset, out.Chunk.Next, out.Chunk.Total, out.Job.DroppedBytes
	}
	return res, nil
}

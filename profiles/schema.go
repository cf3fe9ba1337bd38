package profiles

import (
	"encoding/json"

	"github.com/invopop/jsonschema"
)

// SchemaID is the $id of the profiles file's JSON Schema.
const SchemaID = "https://github.com/wink-mcp/wink-mcp/profiles/profiles.schema.json"

// The types below describe the file for its JSON Schema, which editors use
// to complete and check it (Parse is what wink-mcp reads it with).

type fileSchema struct {
	Default  string                   `json:"default,omitempty" jsonschema_description:"The profile of sessions that choose none (--profile overrides it)."`
	Profiles map[string]profileSchema `json:"profiles" jsonschema_description:"Profiles by name: 1-40 lowercase letters, digits, '_', '.' or '-'. In every value, ${NAME} is wink-mcp's environment variable NAME, read when the file is, and $${NAME} the text ${NAME}."`
}

type profileSchema struct {
	Description string                   `json:"description,omitempty" jsonschema:"maxLength=500" jsonschema_description:"What the profile is for; the workspace prompt lists it."`
	Extends     string                   `json:"extends,omitempty" jsonschema_description:"A profile whose values this one starts from: its setup commands, egress patterns and mounts come first, its env is merged, the rest is replaced."`
	Image       string                   `json:"image,omitempty" jsonschema_description:"The base image (default: the server's)."`
	Setup       []string                 `json:"setup,omitempty" jsonschema:"maxItems=64" jsonschema_description:"Shell commands run once, in order, as root in a hardened container from the image; the result is cached as the profile's image. ${NAME} is wink-mcp's variable: write $NAME or $${NAME} for the shell's."`
	Env         map[string]string        `json:"env,omitempty" jsonschema_description:"Environment of the setup commands and of every command; stored in the image, so no secrets (see --env-pass)."`
	Workdir     string                   `json:"workdir,omitempty" jsonschema_description:"The default working directory of commands, under /workspace."`
	Limits      limitsSchema             `json:"limits,omitempty"`
	Egress      egressSchema             `json:"egress,omitempty"`
	EgressCache []string                 `json:"egress_cache,omitempty" jsonschema_description:"Hosts (as --egress-cache, inside the server's --egress or this profile's egress.session) whose immutable artefacts the proxy keeps in the server's shared cache for this profile's sessions, besides --egress-cache."`
	Mounts      []string                 `json:"mounts,omitempty" jsonschema_description:"Host folders shown in the profile's sessions besides the server's --mount ones, in --mount's form (HOST_PATH[:WORKSPACE_PATH][:OPTIONS]), under an --allowed-root."`
	CABundle    string                   `json:"ca_bundle,omitempty" jsonschema_description:"A PEM file of CA certificates (a private registry's) the setup commands, the sessions and the egress proxy trust besides the server's --ca-bundle; relative to this file's folder."`
	Repo        string                   `json:"repo,omitempty" jsonschema:"maxLength=2304" jsonschema_description:"A repository the profile's sessions start with, https://HOST/PATH[#REF], cloned into /workspace/NAME through the egress proxy; its host must be in the server's --egress or this profile's egress.session (a private one's token in --credentials). Replaces the server's --repo."`
	CDIDevices  []string                 `json:"cdi_devices,omitempty" jsonschema_description:"CDI devices (vendor.com/class=name, such as nvidia.com/gpu=all) the sessions' containers get besides the server's --cdi-device, as this machine's CDI spec (in /etc/cdi or /var/run/cdi) gives them; never the setup's."`
	Services    map[string]serviceSchema `json:"services,omitempty" jsonschema_description:"Services (a database, a cache) the profile's sessions start by name with workspace_service, each a container of its own beside the workspace (see docs/services.md); names are 1-31 lowercase letters, digits and dashes."`
}

type serviceSchema struct {
	Profile   string            `json:"profile,omitempty" jsonschema_description:"The profile whose image the service runs (default: this one)."`
	Command   []string          `json:"command" jsonschema:"minItems=1,maxItems=64" jsonschema_description:"The program and its arguments, run in the foreground."`
	Env       map[string]string `json:"env,omitempty" jsonschema_description:"Environment of the command."`
	Ports     []int             `json:"ports" jsonschema:"minItems=1,maxItems=4" jsonschema_description:"TCP ports (1024-65535, not 3128) the command serves, each also at 127.0.0.1:PORT in the workspace."`
	Ready     readySchema       `json:"ready"`
	User      string            `json:"user,omitempty" jsonschema_description:"A user of the image (such as postgres) the service runs as instead of the workspace's non-root user; never root."`
	Egress    []string          `json:"egress,omitempty" jsonschema_description:"Host patterns (as --egress) the service itself may reach through its own proxy; nothing else, and never the workspace's allowlist (default: none)."`
	Autostart bool              `json:"autostart,omitempty" jsonschema_description:"Start it with the workspace, before its first call runs, after the services it depends on (default false: the model starts it by name)."`
	DependsOn []string          `json:"depends_on,omitempty" jsonschema:"maxItems=4" jsonschema_description:"Services this profile declares that start, and become ready, before this one (with it, when it autostarts or is started by name)."`
}

type readySchema struct {
	Port    int      `json:"port,omitempty" jsonschema_description:"Ready when this port (one of ports) accepts a connection."`
	Command []string `json:"command,omitempty" jsonschema_description:"Ready when this command, run in the service's container, exits 0."`
	Timeout string   `json:"timeout,omitempty" jsonschema_description:"How long to wait for readiness, such as 60s (default 60s, at most 5m)."`
}

type limitsSchema struct {
	Memory         string  `json:"memory,omitempty" jsonschema_description:"Memory limit, such as 2g."`
	CPUs           float64 `json:"cpus,omitempty" jsonschema:"exclusiveMinimum=0" jsonschema_description:"CPU limit in cores."`
	Pids           int     `json:"pids,omitempty" jsonschema:"minimum=16" jsonschema_description:"Most processes at once."`
	Disk           string  `json:"disk,omitempty" jsonschema_description:"Size of /workspace, such as 4g; 0 for no limit."`
	Tmp            string  `json:"tmp,omitempty" jsonschema_description:"Size of the /tmp tmpfs."`
	CommandTimeout string  `json:"command_timeout,omitempty" jsonschema_description:"podman_shell's timeout when a call gives none, such as 5m."`
	SetupTimeout   string  `json:"setup_timeout,omitempty" jsonschema_description:"Bound of each setup command (default 10m)."`
	SetupDisk      string  `json:"setup_disk,omitempty" jsonschema_description:"Bound of what the setup writes to the image (default 8g)."`
}

type egressSchema struct {
	Setup   []string `json:"setup,omitempty" jsonschema_description:"Hosts the setup commands may reach (as --egress)."`
	Session []string `json:"session,omitempty" jsonschema_description:"Hosts the sessions' commands may reach, besides the server's --egress."`
	// SSHAgentHosts narrow --ssh-agent for the profile's sessions.
	SSHAgentHosts []string `json:"ssh_agent_hosts,omitempty" jsonschema_description:"Hosts the server's --ssh-agent keys may be used for in the sessions (each must also match --ssh-agent-hosts when given); without it, the server's."`
}

// Schema returns the JSON Schema of a profiles file, indented.
func Schema() []byte {
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	s := r.Reflect(&fileSchema{})
	s.ID = SchemaID
	s.Title = "wink-mcp profiles"
	s.Description = "Toolchains a wink-mcp session may choose (see docs/toolchains.md)."
	b, _ := json.MarshalIndent(s, "", "  ")
	return append(b, '\n')
}

// Package profiles reads a profiles file: named toolchains a session may
// choose, each a base image, setup commands run once and cached as an image
// (see workspace's image builds), an environment, a working directory,
// limits and egress patterns. A profile may extend another.
//
// The file is YAML. Every value is checked when it is read, and an error
// names the file, the line, the profile and the field.
package profiles

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace/repo"
)

// Profile is one resolved profile: what it extends already merged in.
type Profile struct {
	// Name is the profile's key in the file.
	Name string
	// Description says what the profile is for; the workspace prompt
	// lists it.
	Description string
	// Image is the base image; "" is the server's image.
	Image string
	// Setup are shell commands (sh -c) run once, in order, as root in a
	// hardened container from Image; the result is the profile's image.
	// ${NAME} is expanded in them when the file is read.
	Setup []string
	// SetupSource are the setup commands as the file writes them, before
	// expansion: what messages show, so that a value taken from the
	// environment (a token, say) is not repeated to the model.
	SetupSource []string
	// Env is set in the container, for the setup commands and every
	// session command.
	Env map[string]string
	// Workdir is the default working directory of commands, relative to
	// /workspace ("" for /workspace itself).
	Workdir string
	// Limits override the server's; a zero field keeps the server's.
	Limits Limits
	// Egress are the hosts the setup commands, and the sessions, may reach.
	Egress Egress
	// EgressCache are hosts whose artefacts the proxy keeps in the
	// server's shared cache for this profile's sessions, besides the
	// server's --egress-cache (package egress's ParseCachePolicy).
	EgressCache []string
	// Mounts are host folders shown in the profile's sessions besides the
	// server's, in --mount's form (which the server parses).
	Mounts []Mount
	// CABundle is a PEM file (absolute, or made so against the file's
	// folder) the profile's setup and sessions trust besides the server's
	// --ca-bundle; "" for none.
	CABundle string
	// Repo is the repository its sessions start with (replacing the
	// server's --repo), nil for none; RepoLine is where the file gives it.
	Repo     *repo.Repo
	RepoLine int
	// Services are the services its sessions may start by name (see
	// docs/services.md); what it extends declares them when it does not.
	Services []Service
	// CDIDevices are CDI devices ("vendor.com/class=name") its sessions'
	// containers get besides the server's --cdi-device.
	CDIDevices []string
	// Build, when set, is the project Dockerfile the profile's image is
	// built from (a profile made of a project folder's devcontainer.json
	// or Dockerfile): Image and Setup are then unused.
	Build *Build
	// User is the numeric non-root "uid:gid" its sessions run as; "" for
	// the server's.
	User string
	// PostCreate is a shell command run once in each new session's
	// container, in /workspace, before the first call; "" for none.
	PostCreate string
	// File and Line are where the profile is defined.
	File string
	Line int
	// FileID identifies File whatever path named it (its absolute path,
	// links resolved): part of the image key, so that the profiles of one
	// name in two files never take or prune each other's images.
	FileID string
}

// Build is a Dockerfile in a host folder and its build context.
type Build struct {
	// Dir is the project folder on the host.
	Dir string
	// Dockerfile and Context are relative to Dir, with slashes; the
	// Dockerfile is in the context.
	Dockerfile string
	Context    string
	// Found says where the build comes from and why, for messages.
	Found string
}

// Limits are what a profile may change of the server's limits; zero
// values (nil for Disk) keep the server's.
type Limits struct {
	MemoryBytes int64
	CPUs        float64
	Pids        int64
	// DiskBytes bounds /workspace; a pointer, since 0 turns the limit off.
	DiskBytes *int64
	TmpBytes  int64
	// CommandTimeout is podman_shell's timeout when a call gives none.
	CommandTimeout time.Duration
	// SetupTimeout bounds each setup command (DefaultSetupTimeout when 0).
	SetupTimeout time.Duration
	// SetupDiskBytes bounds what the setup writes to the image
	// (DefaultSetupDiskBytes when 0).
	SetupDiskBytes int64
}

// Mount is one entry of a profile's mounts, with its line for errors.
type Mount struct {
	Spec string
	Line int
}

// Egress are a profile's egress allowlist patterns (package egress), for
// the setup commands and for sessions: each list stands alone, so a host
// the setup needs is not open to the model unless Session names it too.
type Egress struct {
	Setup   []string
	Session []string
	// SSHAgentHosts, when set, narrow the hosts the server's --ssh-agent
	// keys may be used for in the profile's sessions: a host must match
	// one of these and --ssh-agent-hosts (when given).
	SSHAgentHosts []string
}

// Defaults and bounds of profile values.
const (
	// DefaultSetupTimeout bounds each setup command of a profile without
	// limits.setup_timeout.
	DefaultSetupTimeout = 10 * time.Minute
	// DefaultSetupDiskBytes bounds what the setup of a profile without
	// limits.setup_disk writes.
	DefaultSetupDiskBytes = 8 << 30
	// MaxSetupCommands, MaxCommandBytes and MaxEnv bound a profile.
	MaxSetupCommands = 64
	MaxCommandBytes  = 16 << 10
	MaxEnv           = 128
	// MaxTimeout bounds every timeout a profile sets.
	MaxTimeout = 24 * time.Hour
)

// File is a profiles file, read and checked.
type File struct {
	// Path is the file's path as given.
	Path string
	// ID identifies the file whatever path names it (Profile.FileID).
	ID string
	// Default is the profile of sessions that choose none ("" for none:
	// the server's settings alone).
	Default string
	// Profiles are the profiles by name.
	Profiles map[string]*Profile
}

// Names returns the profiles' names, sorted.
func (f *File) Names() []string {
	if f == nil {
		return nil
	}
	names := make([]string, 0, len(f.Profiles))
	for name := range f.Profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// All returns the profiles, sorted by name (none for a nil File).
func (f *File) All() []*Profile {
	var all []*Profile
	for _, name := range f.Names() {
		all = append(all, f.Profiles[name])
	}
	return all
}

// Get returns the profile called name, or an error listing the ones there are.
func (f *File) Get(name string) (*Profile, error) {
	if f != nil {
		if p, ok := f.Profiles[name]; ok {
			return p, nil
		}
	}
	if len(f.Names()) == 0 {
		return nil, fmt.Errorf("profile %q: no profiles are configured (start wink-mcp with --profiles FILE)", name)
	}
	return nil, fmt.Errorf("profile %q does not exist; the profiles are: %v", name, f.Names())
}

// imageKeyFormat is part of every image key: bumped when what a build does
// with the same inputs changes, so that older images are not reused.
// Format 2 added the file's identity.
const imageKeyFormat = 2

// ImageKey is the SHA-256, in hex, of everything a profile's image is
// built from: the profiles file's identity and the profile's name, the
// base image's ID (so that a base retagged to other content builds anew),
// the setup commands, the environment and the setup's egress patterns
// (${NAME} expanded in each), encoded without ambiguity.
func (p *Profile) ImageKey(baseID string) string {
	return p.inputsKey(p.FileID, baseID)
}

// PushTag is the tag of p's image in a registry (`wink-mcp profiles
// build --push`), which a server that cannot inspect the base image (the
// Kubernetes engine's) derives alike: the profile's name and the hash of
// the inputs of ImageKey with the base image's reference as configured
// (bases, the profile's image else the server's choices) in place of its
// ID, and without the file's identity, so that the same profiles file
// read from another path, on another machine, gives the same tag.
func (p *Profile) PushTag(bases []string) string {
	return p.Name + "-" + p.inputsKey("", "ref:"+strings.Join(bases, " "))[:32]
}

// inputsKey is the hash of ImageKey, of the file's identity file and the
// base base.
func (p *Profile) inputsKey(file, base string) string {
	env := make([][2]string, 0, len(p.Env))
	for k, v := range p.Env {
		env = append(env, [2]string{k, v})
	}
	slices.SortFunc(env, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	inputs, _ := json.Marshal(struct {
		Format int         `json:"format"`
		File   string      `json:"file"`
		Name   string      `json:"name"`
		Base   string      `json:"base"`
		Setup  []string    `json:"setup"`
		Env    [][2]string `json:"env"`
		Egress []string    `json:"egress"`
	}{imageKeyFormat, file, p.Name, base, p.Setup, env, p.Egress.Setup})
	sum := sha256.Sum256(inputs)
	return hex.EncodeToString(sum[:])
}

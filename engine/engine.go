// Package engine is what the workspace manager needs from a container
// engine, and the container it asks for, independent of the engine: the
// Podman engine (package engine/podman) implements it against the Podman
// service's REST API, the Kubernetes engine (package engine/kubernetes)
// against a cluster's API server, each workspace a Pod.
//
// The engine is chosen where the program starts: cmd/wink-mcp builds it
// from the flags and hands an Engine to the workspace manager and to
// doctor, which learn where its service is from Engine.Service, not from
// settings of their own. No other package imports an engine or its client libraries, so
// they build, vet and test without the engine's build tags; a test of this
// package fails when one starts to (neutral_test.go). Engine-neutral
// errors and names say nothing of a particular engine: an engine words
// them in its own terms with Worded.
//
// The container an engine makes runs the wink-mcp agent at AgentPath as its
// init, with the session's files at Spec.Root, and must carry every
// hardening setting of a Spec; an engine checks that the container it made
// has them, and refuses it otherwise (ErrSettingsDrift).
package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/wire"
)

// AgentPath is where the wink-mcp binary is, read-only, inside every
// container; it runs there as the container's init.
const AgentPath = "/.wink/wink-mcp"

// RelayArgv is the command an engine's OpenChannel runs in the container:
// the relay that hands its standard streams to the agent.
func RelayArgv() []string { return []string{AgentPath, "relay"} }

// TunnelArgv is the command an engine's OpenTunnel runs in the container:
// the relay of the egress proxy's connections.
func TunnelArgv() []string { return []string{AgentPath, "relay", "tunnel"} }

// TunnelSocketArgv is the relay of the tunnel that rides the socket at
// wire.TunnelSocketPath instead of the exec session's streams.
func TunnelSocketArgv() []string {
	return []string{AgentPath, "relay", "tunnel", "--socket", wire.TunnelSocketPath}
}

// SocketTunnel is implemented by a stream OpenTunnel returns that reaches
// the agent over a socket of its own (see wire.TunnelSocketDir) rather
// than an exec session's attached streams: no detach-key filter is on it,
// so its bytes go unescaped.
type SocketTunnel interface {
	// ViaSocket names the host directory the socket is in.
	ViaSocket() string
	// Streams accepts the connections the agent makes on the tunnel's
	// streams socket (wire.TunnelStreamsPath), one for each connection
	// made to its proxy, checked and carrying that connection's bytes as
	// they are; the tunnel's end closes it and every connection it gave.
	Streams() net.Listener
	// Ports takes the port previews' connections the agent hands over
	// on the same socket (wire.PortHandRequest).
	Ports() PortHandover
}

// PortHandover takes the connections to previewed ports in a container
// that its agent hands over whole, each one the server asked for.
type PortHandover interface {
	// Expect readies the hand-over of one connection to port: token goes
	// in the request to the agent; await returns the connection handed
	// with it (or an error once ctx ends or what came was refused), and
	// cancel forgets the token, closing a connection that came too late.
	Expect(port int) (token string, await func(ctx context.Context) (net.Conn, error), cancel func())
}

// Errors an Engine's methods wrap.
var (
	// ErrUnreachable is wrapped by every error that comes from not
	// reaching the engine's service.
	ErrUnreachable = errors.New("cannot reach the container engine")
	// ErrSlow is wrapped by the error of a call the service did not answer
	// before its deadline.
	ErrSlow = errors.New("the container engine did not answer")
	// ErrImageUnavailable is wrapped when the image is missing and cannot be pulled.
	ErrImageUnavailable = errors.New("workspace image unavailable")
	// ErrNameInUse is returned by Create when the name is taken.
	ErrNameInUse = errors.New("container name already in use")
	// ErrSettingsDrift is wrapped when a created container's effective
	// settings differ from what was asked: something between the request
	// and the runtime (a containers.conf, an image, a bug) weakened them.
	ErrSettingsDrift = errors.New("the container's effective settings differ from those asked for")
)

// Worded returns an error whose text is words and which errors.Is finds to
// be sentinel, one of the errors above: how an engine says it in its own
// terms (the Podman engine names the Podman service) while callers still
// branch on the engine-neutral sentinel.
func Worded(sentinel error, words string) error {
	return worded{sentinel: sentinel, words: words}
}

// worded is the error of Worded.
type worded struct {
	sentinel error
	words    string
}

func (w worded) Error() string { return w.words }
func (w worded) Unwrap() error { return w.sentinel }

// Limits bound what one session's container may use.
type Limits struct {
	// MemoryBytes is the memory limit; swap is not allowed beyond it.
	MemoryBytes int64
	// CPUs is the CPU quota in cores.
	CPUs float64
	// PidsLimit caps the processes of one container.
	PidsLimit int64
	// TmpBytes is the size of the tmpfs mounted at /tmp.
	TmpBytes int64
	// DiskBytes bounds the session's files: /workspace, including the
	// changes to overlay mounts and the copies of copy mounts. 0 turns
	// the limit off.
	DiskBytes int64
	// NofileLimit and NprocLimit are the RLIMIT_NOFILE and RLIMIT_NPROC of the container.
	NofileLimit uint64
	NprocLimit  uint64
}

// Spec is everything that makes a session's container.
type Spec struct {
	Name   string
	Image  string
	Labels map[string]string
	// User is the numeric "uid:gid" the container runs as.
	User string
	// KeepID runs the container in a keep-id user namespace (rootless Podman).
	KeepID bool
	// SELinux relabels the bind mounts for SELinux.
	SELinux bool
	// Root is where the session's files appear in the container, and
	// WorkspaceDir the directory of this machine that holds them.
	Root, WorkspaceDir string
	// WorkspaceVolume, when set, holds the session's files instead of
	// WorkspaceDir: a volume on the engine's host, for a host that does not
	// share this machine's files. It is made when missing, owned by User,
	// and outlives the container until RemoveWorkspace.
	WorkspaceVolume string
	// KeptWorkspace names the kept workspace whose volume (KeptStore.HoldKept)
	// WorkspaceVolume is: it outlives every session, and no removal of a
	// session's volume or sweep of orphans removes it. "" for a session's
	// own volume.
	KeptWorkspace string
	// AgentBinary is the file of this machine mounted at AgentPath, or,
	// with CopyAgent, copied into an image made from Image on the engine's
	// host (once per binary and image).
	AgentBinary string
	CopyAgent   bool
	// Mounts are host folders shown under Root.
	Mounts []Mount
	// Env is set in the container's environment, which every command
	// inherits.
	Env map[string]string
	Limits
	// Caps are capabilities the container keeps (every other is dropped):
	// only a profile's setup container has any (SetupCaps), and it runs as
	// root; a session's container has none.
	Caps []string
	// TmpOnDisk leaves /tmp the image's own directory instead of a tmpfs
	// of TmpBytes: a profile's setup container, whose writes there count
	// with the rest of what it writes to its image.
	TmpOnDisk bool
	// WorkspaceInContainer makes Root a directory of the container's own
	// filesystem, made when missing, instead of WorkspaceDir or
	// WorkspaceVolume: a profile's setup container, whose writes there
	// count with the rest of what it writes, and which no host holds.
	WorkspaceInContainer bool
	// CDIDevices are Container Device Interface devices
	// ("vendor.com/class=name") the engine gives the container as its
	// CDI spec says (device nodes, environment, mounts); none but a
	// session's container has any.
	CDIDevices []string
	// Unlimited lists, comma-separated, the cgroup controllers whose
	// limits the host cannot enforce (HostFacts.Unlimitable) and the
	// container goes without, because the user accepted that.
	Unlimited string
}

// SetupCaps are the capabilities of a profile's setup container, which runs
// as root so that package managers can install: ownership and permission
// bits of the files they unpack, and dropping to the users they download
// as. Nothing lets it reach devices, the network beyond its egress proxy,
// the kernel's settings or other processes.
var SetupCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_SETGID", "CAP_SETUID", "CAP_KILL"}

// Image is one image found by Engine.Images.
type Image struct {
	ID     string
	Names  []string
	Labels map[string]string
	Size   int64
	// Created is when it was made, in Unix seconds.
	Created int64
}

// Limited says whether the container gets the limit of a cgroup controller
// ("memory", "cpu" or "pids").
func (s Spec) Limited(controller string) bool {
	return !slices.Contains(strings.Split(s.Unlimited, ","), controller)
}

// Mount is a host folder mounted into a container: read-only, or as an
// overlay whose changes collect in Upper.
type Mount struct {
	Source, Destination string
	ReadOnly            bool
	Upper, Work         string
}

// Listed is one container or workspace volume found by Engine.List.
type Listed struct {
	Name   string
	Labels map[string]string
}

// Description is what an engine's service says about itself.
type Description struct {
	// URI is the service that answered.
	URI string
	// Version and APIVersion are the service's own version and that of
	// the API it answered with.
	Version, APIVersion string
	// DefaultRuntime is the OCI runtime used when none is named.
	DefaultRuntime string
	// CgroupsVersion is "v1" or "v2" as the service sees the host.
	CgroupsVersion string
	// Rootless is true for a service running without root.
	Rootless bool
	// Remote is true when the service is not on this host's Unix socket.
	Remote bool
	// Unlimitable lists, comma-separated, the cgroup controllers a limit
	// needs that the service's containers cannot have (HostFacts).
	Unlimitable string
	// GraphDriver is the storage driver of its images ("overlay", "vfs").
	GraphDriver string
}

// Service is the service an engine was configured to drive, known before
// the engine connects to it.
type Service struct {
	// Address is where the engine was told to find its service; "" when
	// it tries its default places in turn.
	Address string
	// Remote is true when the service is on another host: what this host
	// has (the engine's CLI, CRIU) is not what the service has.
	Remote bool
	// BoundsDisk is true when the service itself bounds a container's
	// files by Spec.DiskBytes (a Kubernetes node's ephemeral-storage
	// limits), so that wink-mcp needs no filesystem of its own for them.
	BoundsDisk bool
	// Pods is true when each container is a Kubernetes Pod and the service
	// a cluster's API server: the Spec's pids limit and rlimits are no Pod
	// settings, and a Pod has a network device (eth0) that a policy cuts
	// off (the engine is a NetworkPolicer).
	Pods bool
	// FilesGoWithContainer is true when a container's files at Spec.Root
	// live and die with it (a Pod's emptyDir), not in a directory or
	// volume that outlives it: before removing a container for idleness,
	// which a later one replaces, the workspace saves them and restores
	// them into the next.
	FilesGoWithContainer bool
	// TunnelSockets is true when a container whose agent is bind-mounted
	// from this machine (no Spec.CopyAgent) gets a socket of its own for
	// its tunnel (see wire.TunnelSocketDir); otherwise, and for the
	// others, the tunnel rides an exec session's streams.
	TunnelSockets bool
}

// HostFacts are what container specs depend on about the engine's host.
type HostFacts struct {
	Rootless bool            `json:"rootless"`
	SELinux  bool            `json:"selinux"`
	Markers  changes.Markers `json:"markers"` // the driver of its overlay mounts
	// Unlimitable lists, comma-separated, the cgroup controllers a limit
	// needs that containers here cannot have: all of them for rootless
	// Podman on cgroups v1, the undelegated ones for rootless on v2.
	Unlimitable string `json:"unlimitable,omitempty"`
	Cgroups     string `json:"cgroups,omitempty"` // "v1" or "v2"
	// Arch is the host's architecture as Go names it ("amd64", "arm64").
	Arch string `json:"arch,omitempty"`
}

// Engine makes and reaches containers. Its methods are safe for concurrent use.
type Engine interface {
	// Describe connects to the engine's service and describes it.
	Describe(ctx context.Context) (Description, error)
	// Service says which service the engine is configured to drive; it
	// connects to nothing.
	Service() Service
	// ServiceFix says how to get the engine's service to answer; the
	// error of a service that cannot be reached ends with it.
	ServiceFix() string
	// Host returns what specs depend on about the engine's host; settled
	// is false when the facts are an earlier process's, not yet confirmed.
	Host(ctx context.Context) (h HostFacts, settled bool, err error)
	// SettledHost returns the host facts as the engine gives them now.
	SettledHost(ctx context.Context) (HostFacts, error)
	// EnsureImage returns the first of choices the engine has, or pulls
	// the last when it has none.
	EnsureImage(ctx context.Context, choices []string) (image string, err error)
	// ChooseImage is EnsureImage, also saying whether it pulled.
	ChooseImage(ctx context.Context, choices []string) (image string, pulled bool, err error)
	// ImageID returns the ID of image, which must be present.
	ImageID(ctx context.Context, image string) (string, error)
	// Commit makes image (repository:tag) from the files of the container
	// name, with these labels besides the container's own.
	Commit(ctx context.Context, name, image string, labels map[string]string) error
	// WrittenBytes is what the container has written to its own
	// filesystem, mounts aside.
	WrittenBytes(ctx context.Context, name string) (int64, error)
	// ClearDirs removes everything in each of dirs of the container name,
	// as its root, in the container: what a setup container left in its
	// /tmp and workspace (Spec.TmpOnDisk, Spec.WorkspaceInContainer),
	// before Commit saves its files.
	ClearDirs(ctx context.Context, name string, dirs []string) error
	// Images returns the images with the label (key=value).
	Images(ctx context.Context, label string) ([]Image, error)
	// RemoveImage removes an image no container uses; a missing one is not
	// an error.
	RemoveImage(ctx context.Context, image string) error
	// Create creates a container and checks its effective settings; it
	// returns ErrNameInUse if the name is taken.
	Create(ctx context.Context, spec Spec) error
	// Start starts a created container.
	Start(ctx context.Context, name string) error
	// AttachCommand is the shell command a person runs to open a shell in
	// the container; it opens nothing itself.
	AttachCommand(name string) string
	// Running reports whether the container exists and whether it runs.
	Running(ctx context.Context, name string) (exists, running bool, err error)
	// Remove force-removes a container and its anonymous volumes; a missing
	// container is not an error.
	Remove(ctx context.Context, name string) error
	// RemoveWorkspace removes the volume of Spec.WorkspaceVolume name; a
	// missing one is not an error.
	RemoveWorkspace(ctx context.Context, name string) error
	// List returns every container, and every workspace volume, with the
	// label managedLabel=true; a volume's container may be gone.
	List(ctx context.Context, managedLabel string) ([]Listed, error)
	// CopyIn extracts the tar archive r into the directory dir of the
	// container, created or running.
	CopyIn(ctx context.Context, name, dir string, r io.Reader) error
	// CopyOut writes a tar archive of path in the container to w; its
	// entries are named from path's last element. A missing path wraps
	// fs.ErrNotExist.
	CopyOut(ctx context.Context, name, path string, w io.Writer) error
	// OpenChannel starts `wink-mcp relay` in the container and returns a
	// stream to its agent. Closing the stream ends the relay.
	OpenChannel(ctx context.Context, name string) (io.ReadWriteCloser, error)
	// OpenTunnel starts `wink-mcp relay tunnel` in the container and
	// returns its attached streams: the egress tunnel (see wire.ProxyPort).
	OpenTunnel(ctx context.Context, name string) (io.ReadWriteCloser, error)
}

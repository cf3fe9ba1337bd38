package workspace

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
	"github.com/wink-mcp/wink-mcp/workspace/repo"
)

// Defaults of Config.
const (
	// LocalImage is the workspace image `make setup` builds, offline, from
	// the Debian archive; a Config without Image uses it when present.
	LocalImage = "localhost/wink-workspace:bookworm"
	// DefaultImage is pulled for a Config without Image when LocalImage is
	// absent.
	DefaultImage = "docker.io/library/python:3.12-slim"
	// ImageRemedy says how to get a workspace image; the error of one that
	// is missing and cannot be pulled ends with it.
	ImageRemedy = "Run `make setup`, which builds " + LocalImage + " (used when --image is not given), " +
		"or pass --image (WINK_IMAGE) naming an image that is present, or make its registry reachable"
	DefaultUser        = "65534:65534"
	DefaultMemoryBytes = 1 << 30
	DefaultCPUs        = 1.0
	DefaultPidsLimit   = 256
	DefaultTmpBytes    = 256 << 20
	DefaultDiskBytes   = 2 << 30
	// DefaultNofileLimit and DefaultNprocLimit are set on every container
	// rather than left to Podman, whose defaults exceed the hard limits of
	// some hosts and then make every start fail. RLIMIT_NPROC counts all
	// processes of the container user's host UID, across sessions; the pids
	// limit is the per-container bound.
	DefaultNofileLimit = 4096
	DefaultNprocLimit  = 4096
	DefaultNamePrefix  = "wink"
	DefaultIdleTimeout = 15 * time.Minute
	// DefaultMaxJobAge is how long running jobs keep an idle container.
	DefaultMaxJobAge = 2 * time.Hour
	// DefaultStopGrace is the grace of a session's jobs when it ends.
	DefaultStopGrace = 2 * time.Second
	// DefaultCheckpointBytes bounds what one workspace's checkpoints hold.
	DefaultCheckpointBytes = 4 << 30
	DefaultAPITimeout      = 30 * time.Second
	DefaultPullTimeout     = 10 * time.Minute
	// DefaultWatchDirs is how many of a workspace's directories are
	// watched for changes; each watch costs the kernel about 1 KiB, and
	// every container's user shares the host's fs.inotify.max_user_watches.
	DefaultWatchDirs = 8192
	// MaxWatchDirs bounds --watch-dirs.
	MaxWatchDirs = 1 << 20
	// DefaultInotifyShares is how many parts the host's per-user inotify
	// limits are cut into, one the most a workspace's commands may hold.
	DefaultInotifyShares = 8
	// MaxInotifyShares bounds --inotify-shares.
	MaxInotifyShares = 1024
)

// Config says how sessions' containers are made and where their files live.
// The zero value is not usable; start from DefaultConfig.
type Config struct {
	// Image is the container image; it is pulled when missing. Empty
	// chooses LocalImage when the service has it, else DefaultImage.
	Image string
	// User is the numeric "uid:gid" the container runs as; "" chooses:
	// the owner of the writable mounts when there are any (so the session
	// can edit them), else DefaultUser. Root (uid 0) is refused.
	User string
	// Limits bound what the container may use.
	engine.Limits
	// AllowUnenforcedLimits lets sessions run where the service cannot
	// enforce the memory, CPU or process limits (rootless Podman on cgroups
	// v1), without them; everything else is still enforced and checked.
	// Without it such a service's containers are refused.
	AllowUnenforcedLimits bool
	// Quotas, when set, holds each container's memory and CPU limits
	// against its session's principal while the container exists (a
	// pooled container's from when a session takes it); a container past
	// the principal's quota is not made, and the call says why. It also
	// counts what the checkpoint stores of the principal's workspaces
	// hold (a kept workspace's while it is kept, found on disk at start):
	// a checkpoint past the quota is refused, leaving nothing written.
	Quotas *quota.Ledger
	// NamePrefix starts every container name.
	NamePrefix string
	// CacheDir holds the per-session directories mounted at /workspace.
	CacheDir string
	// CheckpointBytes bounds the store of one workspace's checkpoints: the
	// bytes of its objects, each file's content and each directory's tree
	// stored once however many checkpoints hold it; 0 for no bound.
	CheckpointBytes int64
	// CheckpointDir holds the checkpoints of the kept workspaces an engine
	// holds (engine.KeptStore), one store per workspace, where every
	// server of that engine finds them (kept_store.go): a directory they
	// all share; "" for a directory under CacheDir.
	CheckpointDir string
	// ForkLimit bounds the forks (workspace_fork) one principal may have
	// waiting for their handles at once; 0 turns forks off.
	ForkLimit int
	// ForkBytes bounds what those waiting forks take on the cache disk, in
	// all; 0 for no bound but the cache disk's free space.
	ForkBytes int64
	// KeepSessionDirs keeps session directories after their sessions end.
	KeepSessionDirs bool
	// IdleTimeout removes a session's container after this long without calls.
	IdleTimeout time.Duration
	// MaxJobAge is how long running background jobs keep an idle session's
	// container from the idle clean-up; zero keeps it as long as they run.
	MaxJobAge time.Duration
	// StopGrace is how long the jobs of a session that ends have between
	// SIGTERM and the container's removal.
	StopGrace time.Duration
	// Mounts are host folders shown in every session's workspace; each
	// must lie under one of AllowedRoots.
	Mounts       []Mount
	AllowedRoots []string
	// MountRoots mounts the folders an MCP client declares as its roots,
	// as overlays, when they lie under AllowedRoots.
	MountRoots bool
	// ExportDir, when set, receives each session's changes to its mounted
	// folders as git patches when the session ends.
	ExportDir string
	// ExportIgnored puts in patches the new files that a folder's own
	// .gitignore rules ignore; by default they are left out and named.
	ExportIgnored bool
	// Engine makes and reaches the sessions' containers: cmd/wink-mcp
	// builds it from the flags, which name its service. NewManager
	// refuses a Config without one; NewService needs one.
	Engine engine.Engine
	// CDIDevices are the CDI devices ("vendor.com/class=name") every
	// session's container gets (--cdi-device); NewManager refuses one no
	// CDI spec of this machine names.
	CDIDevices []string
	// ImageBuilder builds a project's Dockerfile (profiles.Profile.Build);
	// nil when the engine cannot.
	ImageBuilder engine.ImageBuilder
	// PushedProfileRepository, when set, is the registry repository the
	// profiles' images were pushed to (`wink-mcp profiles build --push`),
	// for an engine that cannot build them (Kubernetes): a profile with
	// setup commands then runs its pushed image, and its setup never runs.
	PushedProfileRepository string
	// FilesOnEngineHost is for an engine whose host does not share this
	// machine's files (Podman over ssh://, a podman machine VM): each
	// session's /workspace is a volume on the engine's host, the agent is
	// copied into an image there, and host folders cannot be mounted.
	FilesOnEngineHost bool
	// SharedPaths are folders of this machine that the engine's host sees
	// at the same paths (a podman machine shares the user's home). With
	// FilesOnEngineHost, host folders under them may be mounted as
	// overlays or read-only, and overlays need CacheDir under one too:
	// their changes are kept there.
	SharedPaths []string
	// AgentBinary is the static wink-mcp binary mounted into each container
	// as its init; "" means the running executable.
	AgentBinary string
	// APITimeout bounds each call to the Podman service.
	APITimeout time.Duration
	// PullTimeout bounds an image pull.
	PullTimeout time.Duration
	// Warm is how many containers are kept made and started ahead of need,
	// each handed to a new session; 0 makes each session's own.
	Warm int
	// CreateParallelism is how many containers are made at once (created,
	// their disk mounted, started and their agent answering); the others
	// wait their turn for as long as their caller allows, the warm pool's
	// refills after every client's. See DefaultCreateParallelism.
	CreateParallelism int
	// WatchDirs is the most directories of a workspace watched for the
	// changes commands make (see WatchStatus); past it a directory's
	// changes are reported as "anything under it may have changed" after
	// each command. 0 watches nothing.
	WatchDirs int
	// InotifyShares cuts the host's per-user inotify instances and
	// watches, which every workspace of one uid draws on, into this many
	// parts: a workspace's commands may hold one, and past it the agent
	// kills the greediest of their processes. 1 lets one workspace's
	// commands take it all.
	InotifyShares int
	// Egress are the allowlist patterns of the egress proxy (see package
	// egress); none keeps the containers without any way out.
	Egress []string
	// EgressMaxBytes caps what one session's proxy may carry.
	EgressMaxBytes int64
	// EgressMaxConns caps the connections one session's proxy holds open
	// at once; as many more wait for one to close.
	EgressMaxConns int
	// PreviewHosts and PreviewOrigins are the Host names and Origins port
	// previews accept besides loopback ones: the MCP endpoint's
	// --allowed-host and --allowed-origin.
	PreviewHosts, PreviewOrigins []string
	// Profiles are the toolchains a session may choose (nil for none).
	Profiles *profiles.File
	// Profile names the profile of sessions that choose none; "" is
	// Profiles.Default, which may be "" too: the settings above alone.
	Profile string
	// ProfileMounts are the host folders each profile (by name) shows in
	// its sessions besides Mounts.
	ProfileMounts map[string][]Mount
	// Repo is the repository every session's workspace starts with
	// (--repo), cloned as its container's first step; nil for none.
	Repo *repo.Repo
	// Detection is what --detect found in the host folders (nil when it
	// did not look); the prompt and workspace_profile say it.
	Detection *Detection
	// PassedEnv are variables of the server's environment set in every
	// session's container (--env-pass); never logged.
	PassedEnv map[string]string
	// GitIdentity, when set, is the git user.name and user.email of every
	// session's container (--git-identity).
	GitIdentity *GitIdentity
	// Credentials are the headers the egress proxy sets for their hosts
	// (--credentials); nil for none.
	Credentials *egress.Credentials
	// CABundle is a PEM file of CAs the containers and the egress proxy
	// trust besides the public roots (--ca-bundle); "" for none.
	CABundle string
	// EgressCache are the hosts whose immutable artefacts the egress proxy
	// keeps for every session (--egress-cache; see egress.Cache); each
	// must be inside an --egress pattern or a profile's egress.session.
	EgressCache []string
	// EgressCacheBytes bounds the artefact cache (--egress-cache-size).
	EgressCacheBytes int64
	// EgressCacheDir holds the artefact cache (--egress-cache-dir); ""
	// is egress-cache under CacheDir.
	EgressCacheDir string
	// SSHAgent, when set, lends the containers the server's ssh-agent
	// through the egress proxy (--ssh-agent); nil for none.
	SSHAgent *SSHAgent
	// EgressAsk asks the user, through the function Manager.OnEgressAsk
	// sets, whether a session may reach a host no pattern allows; it turns
	// the proxy on even without patterns.
	EgressAsk bool
}

// allMounts are Mounts and every profile's mounts.
func (c Config) allMounts() []Mount {
	all := slices.Clone(c.Mounts)
	for _, name := range slices.Sorted(maps.Keys(c.ProfileMounts)) {
		all = append(all, c.ProfileMounts[name]...)
	}
	return all
}

// limitsDisks says whether some session's /workspace may have a disk limit:
// the server's, or a profile's.
func (c Config) limitsDisks() bool {
	if c.DiskBytes > 0 {
		return true
	}
	for _, p := range c.Profiles.All() {
		if p.Limits.DiskBytes != nil && *p.Limits.DiskBytes > 0 {
			return true
		}
	}
	return false
}

// profilesHaveEgress says whether a profile gives its sessions egress.
func (c Config) profilesHaveEgress() bool {
	if c.Profiles == nil {
		return false
	}
	for _, p := range c.Profiles.Profiles {
		if len(p.Egress.Session) > 0 {
			return true
		}
	}
	return false
}

// profilesHaveCABundle says whether a profile names a ca_bundle.
func (c Config) profilesHaveCABundle() bool {
	if c.Profiles == nil {
		return false
	}
	for _, p := range c.Profiles.Profiles {
		if p.CABundle != "" {
			return true
		}
	}
	return false
}

func (c Config) credentialsPath() string {
	if c.Credentials == nil {
		return ""
	}
	return c.Credentials.Path
}

// EgressOn says whether the containers get the egress proxy.
func (c Config) EgressOn() bool { return len(c.Egress) > 0 || c.EgressAsk }

// DefaultConfig returns the defaults, with the cache under the user's cache directory.
func DefaultConfig() Config {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return Config{
		Limits: engine.Limits{
			MemoryBytes: DefaultMemoryBytes,
			CPUs:        DefaultCPUs,
			PidsLimit:   DefaultPidsLimit,
			TmpBytes:    DefaultTmpBytes,
			DiskBytes:   DefaultDiskBytes,
			NofileLimit: DefaultNofileLimit,
			NprocLimit:  DefaultNprocLimit,
		},
		NamePrefix:        DefaultNamePrefix,
		CacheDir:          filepath.Join(cache, "wink-mcp"),
		IdleTimeout:       DefaultIdleTimeout,
		CheckpointBytes:   DefaultCheckpointBytes,
		ForkLimit:         DefaultForkLimit,
		MaxJobAge:         DefaultMaxJobAge,
		StopGrace:         DefaultStopGrace,
		APITimeout:        DefaultAPITimeout,
		PullTimeout:       DefaultPullTimeout,
		WatchDirs:         DefaultWatchDirs,
		InotifyShares:     DefaultInotifyShares,
		CreateParallelism: DefaultCreateParallelism(),

		EgressMaxBytes:   egress.DefaultMaxBytes,
		EgressMaxConns:   egress.DefaultMaxConns,
		EgressCacheBytes: egress.DefaultCacheBytes,
	}
}

var numericUser = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)

// Validate reports every setting that is out of range, naming each.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.User == "" || numericUser.MatchString(c.User), "user %q must be numeric uid:gid, such as 65534:65534 (names would be resolved inside an untrusted image)", c.User)
	uid, _, _ := strings.Cut(c.User, ":")
	check(c.User == "" || strings.Trim(uid, "0") != "", "user %q is root; the workspace never runs as root", c.User)
	check(c.MemoryBytes >= 16<<20, "memory limit %d bytes is below the minimum of 16 MiB", c.MemoryBytes)
	check(c.CPUs > 0 && c.CPUs <= 1024, "cpus %g must be above 0", c.CPUs)
	check(c.PidsLimit >= 16, "pids limit %d is below the minimum of 16", c.PidsLimit)
	check(c.TmpBytes >= 1<<20, "tmp size %d bytes is below the minimum of 1 MiB", c.TmpBytes)
	check(c.DiskBytes == 0 || c.DiskBytes >= 16<<20, "disk limit %d bytes is below the minimum of 16 MiB (0 turns it off)", c.DiskBytes)
	check(c.NofileLimit >= 64, "nofile limit %d is below the minimum of 64", c.NofileLimit)
	check(c.NprocLimit >= uint64(c.PidsLimit), "nproc limit %d is below the pids limit %d", c.NprocLimit, c.PidsLimit)
	check(namePrefixPattern.MatchString(c.NamePrefix), "name prefix %q must be 1-40 letters, digits, '_', '.' or '-', starting with a letter or digit", c.NamePrefix)
	check(filepath.IsAbs(c.CacheDir), "cache directory %q must be an absolute path", c.CacheDir)
	check(c.IdleTimeout > 0, "idle timeout must be positive")
	check(c.ForkLimit >= 0, "fork limit %d is negative (0 turns forks off)", c.ForkLimit)
	check(c.ForkBytes >= 0, "fork bytes limit %d is negative (0 removes it)", c.ForkBytes)
	check(c.CheckpointBytes == 0 || c.CheckpointBytes >= 16<<20, "checkpoint limit %d bytes is below the minimum of 16 MiB (0 removes the limit)", c.CheckpointBytes)
	check(c.MaxJobAge >= 0, "the maximum job age must not be negative")
	check(c.StopGrace >= 0 && c.StopGrace <= MaxGrace, "the stop grace %s must be between 0 and %s", c.StopGrace, MaxGrace)
	check(c.APITimeout > 0, "podman API timeout must be positive")
	check(c.PullTimeout > 0, "pull timeout must be positive")
	check(c.ExportDir == "" || filepath.IsAbs(c.ExportDir), "export directory %q must be an absolute path", c.ExportDir)
	check(c.CheckpointDir == "" || filepath.IsAbs(c.CheckpointDir), "--checkpoint-dir %q must be an absolute path", c.CheckpointDir)
	if _, err := egress.ParsePolicy(c.Egress); err != nil {
		errs = append(errs, err)
	}
	check(c.EgressMaxBytes >= 1<<20, "--egress-max-bytes %d is below the minimum of 1 MiB", c.EgressMaxBytes)
	check(c.EgressMaxConns >= 1 && c.EgressMaxConns <= egress.MaxMaxConns, "--egress-max-conns %d must be between 1 and %d (connections a session's proxy holds open at once)", c.EgressMaxConns, egress.MaxMaxConns)
	check(c.WatchDirs >= 0 && c.WatchDirs <= MaxWatchDirs, "watch-dirs %d must be between 0 and %d", c.WatchDirs, MaxWatchDirs)
	check(c.InotifyShares >= 1 && c.InotifyShares <= MaxInotifyShares, "--inotify-shares %d must be between 1 and %d (1 lets one workspace's commands take all of the host's per-user inotify limits)", c.InotifyShares, MaxInotifyShares)
	check(c.CreateParallelism >= 1 && c.CreateParallelism <= MaxCreateParallelism, "--create-parallelism %d must be between 1 and %d (containers made at once; the others wait their turn)", c.CreateParallelism, MaxCreateParallelism)
	check(c.Warm >= 0 && c.Warm <= MaxWarm, "warm %d must be between 0 and %d", c.Warm, MaxWarm)
	check(c.Warm == 0 || !c.MountRoots, "--warm %d cannot serve --mount-roots: a pooled container is made before any client names its roots; drop one of them", c.Warm)
	check(c.Warm == 0 || !c.KeepSessionDirs, "--warm %d cannot serve --keep-session-dirs: a kept directory is named after its session, which a pooled container's is not; drop one of them", c.Warm)
	errs = append(errs, c.checkEgressCache()...)
	check((c.Credentials == nil && c.CABundle == "" && !c.EgressCacheOn() && !c.profilesHaveCABundle()) || !c.FilesOnEngineHost || c.sharedWithEngineHost(c.CacheDir),
		"--credentials, --egress-cache, --ca-bundle and a profile's ca_bundle need the engine's host to share this machine's files (local or rootless Podman), "+
			"where the containers mount the CA bundle; this engine keeps them elsewhere (remote Podman without a --podman-shared-path "+
			"holding --cache-dir %s, or Kubernetes), which does not have them yet", c.CacheDir)
	check(c.SSHAgent == nil || !c.FilesOnEngineHost || c.sharedWithEngineHost(c.CacheDir),
		"--ssh-agent needs the engine's host to share this machine's files (local or rootless Podman), where the containers mount "+
			"the known_hosts; this engine keeps them elsewhere (remote Podman without a --podman-shared-path holding --cache-dir %s, "+
			"or Kubernetes), which does not have it yet", c.CacheDir)
	check(c.SSHAgent == nil || c.EgressOn() || c.profilesHaveEgress(),
		"--ssh-agent: the sessions have no egress proxy to carry ssh; add --egress naming the hosts to reach over ssh")
	check(c.Credentials == nil || c.EgressOn() || c.profilesHaveEgress(),
		"--credentials %s: the sessions have no egress proxy to inject them; add --egress naming the credentials' hosts", c.credentialsPath())
	for _, name := range c.Credentials.Names() {
		for _, p := range c.Credentials.Get(name).Profiles {
			check(c.Profiles != nil && c.Profiles.Profiles[p] != nil, "--credentials %s: %s.profiles names %s, which no profiles file (--profiles) defines",
				c.credentialsPath(), name, p)
		}
	}
	const onPodmanHost = "cannot serve a Podman service whose host does not share this machine's files " +
		"(--files-on-podman-host, the default for ssh:// URLs): "
	for _, mt := range c.allMounts() {
		check(!c.FilesOnEngineHost || mt.Mode == MountCopy || c.sharedWithEngineHost(mt.HostPath), "--mount %s as an overlay or read-only mount %s"+
			"the folder is not there. Mount it as a copy (add the option copy), which is uploaded; or, if the Podman host sees it "+
			"at the same path (a podman machine sees your home), say so with --podman-shared-path", mt.HostPath, onPodmanHost)
		check(!c.FilesOnEngineHost || mt.Mode == MountCopy || mt.Mode == MountReadOnly || !c.sharedWithEngineHost(mt.HostPath) ||
			c.sharedWithEngineHost(c.CacheDir), "--mount %s as an overlay on a Podman host that does not share this machine's files "+
			"needs the cache directory %s under a --podman-shared-path too, where the overlay's changes are kept; move --cache-dir there", mt.HostPath, c.CacheDir)
	}
	check(!c.FilesOnEngineHost || !c.MountRoots || c.sharedWithEngineHost(c.CacheDir) && !slices.ContainsFunc(c.AllowedRoots, func(r string) bool { return !c.sharedWithEngineHost(r) }),
		"--mount-roots %sthe client's roots are not there unless every --allowed-root and the cache directory are under a --podman-shared-path. "+
			"Drop --mount-roots, or say which folders the Podman host sees at the same path", onPodmanHost)
	check(!c.FilesOnEngineHost || !c.KeepSessionDirs, "--keep-session-dirs %s"+
		"the session's files are a volume there, removed with the session. Drop --keep-session-dirs", onPodmanHost)
	if c.Profile != "" {
		if _, err := c.Profiles.Get(c.Profile); err != nil {
			errs = append(errs, fmt.Errorf("--profile: %w", err))
		}
	}
	check(!c.MountRoots || len(c.AllowedRoots) > 0, "--mount-roots needs at least one --allowed-root: client roots are mounted only under allowed roots")
	if ch := mounts.OverlayOptionChar(c.CacheDir); ch != 0 && c.overlays() {
		errs = append(errs, fmt.Errorf("--cache-dir %s holds '%c', which an overlay mount cannot carry: the overlays' upper and work directories live there, "+
			"and Podman writes their paths into the mount's options, where the kernel reads ',' as the end of an option and '\\' as an escape. "+
			"Choose a cache directory without ',' or '\\' (--cache-dir or WINK_CACHE), or mount the folders as copies (the option copy)", c.CacheDir, ch))
	}
	return errors.Join(errs...)
}

// sharedWithEngineHost says whether the engine's host sees path at the
// same path (SharedPaths).
func (c Config) sharedWithEngineHost(path string) bool {
	path = filepath.Clean(path)
	return slices.ContainsFunc(c.SharedPaths, func(shared string) bool {
		shared = filepath.Clean(shared)
		return path == shared || strings.HasPrefix(path, strings.TrimSuffix(shared, "/")+"/")
	})
}

// ImageChoices are the images a session may use, in order of preference:
// the first the service has, else the last, pulled.
func (c Config) ImageChoices() []string {
	if c.Image != "" {
		return []string{c.Image}
	}
	return []string{LocalImage, DefaultImage}
}

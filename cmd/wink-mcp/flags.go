package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/profiles/devcontainer"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/server"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// errHelp is returned when -h was given and the usage has been printed.
var errHelp = errors.New("help requested")

type logOptions struct {
	level  string
	format string
}

// serveOptions are the serve command's settings that are not the server's config.
type serveOptions struct {
	transport     string
	authTokenFile string
	mounts        []string
	warm          string
	filesOnHost   string
	profilesFile  string
	noBuiltins    bool
	detect        string
	repo          string
	credentials   string
	ssh           sshOptions
	envPass       []string
	gitIdentity   bool
	projectImage  bool
	cdiDevices    []string
	// project is what --project-image found (nil without it).
	project   *devcontainer.Found
	logs      logOptions
	engine    engineOptions
	observe   observeOptions
	quotas    quota.Limits
	quotaCPUs float64
	// service is how the Podman service was named; once resolved, its
	// connection is the connection used, "" for none.
	service podmanService
}

// parseServeFlags builds the server's configuration from, in increasing
// precedence, the defaults, the environment (read through lookup) and args.
func parseServeFlags(args []string, lookup func(string) (string, bool), out io.Writer) (server.Config, serveOptions, error) {
	cfg := server.Config{Workspace: workspace.DefaultConfig(), ShutdownTimeout: server.DefaultShutdownTimeout, HTTP: server.DefaultHTTPConfig(),
		MaxCommandTimeout: tools.DefaultMaxCommandTimeout}
	w, h := &cfg.Workspace, &cfg.HTTP
	opts := serveOptions{transport: server.TransportStdio, warm: "auto", filesOnHost: "auto", detect: detectAsk, engine: engineOptions{name: enginePodman, namespace: defaultNamespace, workspaceVolume: volumeEmptyDir}, logs: logOptions{level: "info", format: "text"}}
	logs := &opts.logs
	fs := flag.NewFlagSet("wink-mcp", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: wink-mcp [serve] [flags]\n       wink-mcp doctor [flags]\n       wink-mcp export [--session HASH] [--out DIR]\n       wink-mcp workspaces [list | show NAME | rm NAME | prune --older-than DURATION]\n       wink-mcp profiles [list | build [NAME...] | schema] [flags]\n\nServes MCP over stdio, SSE or streamable HTTP; each session gets its own Podman container.\nEvery flag can also be set by the environment variable named in brackets.\n\n")
		fs.PrintDefaults()
	}
	b := &binder{fs: fs, lookup: lookup}
	b.str(&w.Image, "image", "container image for workspaces, pulled when missing (default: "+workspace.LocalImage+" when present, else "+workspace.DefaultImage+")", "WINK_IMAGE")
	b.str(&w.User, "user", "numeric uid:gid the container runs as (default: the owner of the writable mounts, else 65534:65534)", "WINK_USER")
	b.bytes(&w.MemoryBytes, "memory", "memory limit, no swap beyond it (e.g. 1g, 512m)", "WINK_MEMORY")
	b.float(&w.CPUs, "cpus", "CPU limit in cores", "WINK_CPUS")
	b.int64(&w.PidsLimit, "pids-limit", "maximum processes per container", "WINK_PIDS_LIMIT")
	b.bytes(&w.TmpBytes, "tmp-size", "size of the /tmp tmpfs (e.g. 256m)", "WINK_TMP_SIZE")
	b.bytes(&w.DiskBytes, "disk-limit", "size of each session's own filesystem holding /workspace (e.g. 2g; 0 = no limit; needs root)", "WINK_DISK_LIMIT")
	b.uint64(&w.NofileLimit, "nofile", "RLIMIT_NOFILE of the container", "WINK_NOFILE")
	b.boolean(&w.AllowUnenforcedLimits, "allow-unenforced-limits", "run containers without the memory, CPU and process limits a host cannot enforce (rootless Podman on cgroups v1) instead of refusing them; everything else stays enforced", "WINK_ALLOW_UNENFORCED_LIMITS")
	b.uint64(&w.NprocLimit, "nproc", "RLIMIT_NPROC of the container user (counted per host UID)", "WINK_NPROC")
	b.pathList(&opts.mounts, "mount", "a host folder to show in every workspace: "+mountSyntax+" (repeatable)", "WINK_MOUNTS")
	b.pathList(&w.AllowedRoots, "allowed-root", "a folder under which host folders may be mounted (repeatable)", "WINK_ALLOWED_ROOTS")
	b.boolean(&w.MountRoots, "mount-roots", "also mount the folders the client declares as its roots, if under an allowed root", "WINK_MOUNT_ROOTS")
	b.boolean(&w.ExportIgnored, "export-ignored", "put in patches the new files a mounted folder's .gitignore ignores (default: left out and named)", "WINK_EXPORT_IGNORED")
	b.str(&w.ExportDir, "export-on-exit", "directory that receives each session's changes to its mounted folders as git patches when it ends", "WINK_EXPORT_ON_EXIT")
	b.pathList(&w.Egress, "egress", "a host the workspace may reach through its egress proxy: name, *.domain or address, optionally :port (default ports 443 and 80); an exact name with a port may be private or loopback (repeatable; none: no network at all)", "WINK_EGRESS")
	b.boolean(&w.EgressAsk, "egress-ask", "ask the user, by MCP elicitation, whether a session may reach a host no --egress pattern allows (clients without elicitation get the refusal)", "WINK_EGRESS_ASK")
	b.bytes(&w.EgressMaxBytes, "egress-max-bytes", "bytes one session's egress proxy may carry, both ways, in all (e.g. 4g)", "WINK_EGRESS_MAX_BYTES")
	b.int(&w.EgressMaxConns, "egress-max-conns", fmt.Sprintf("connections one session's egress proxy holds open at once, 1-%d; as many more wait up to %s for one to close", egress.MaxMaxConns, egress.DefaultQueueWait), "WINK_EGRESS_MAX_CONNS")
	b.str(&opts.credentials, "credentials", "a YAML file of credentials the egress proxy sets as headers for their hosts only (values from this environment or files; sessions see a placeholder); see docs/network.md", "WINK_CREDENTIALS")
	b.pathList(&w.EgressCache, "egress-cache", "a host (as --egress, port 443 unless named) whose immutable artefacts (Go modules, npm tarballs, .debs, wheels) the egress proxy keeps on disk for every session; it must be inside an --egress pattern (repeatable); see docs/network.md", "WINK_EGRESS_CACHE")
	b.bytes(&w.EgressCacheBytes, "egress-cache-size", "bytes the artefact cache may hold; the least recently used go first (e.g. 2g)", "WINK_EGRESS_CACHE_SIZE")
	b.str(&w.EgressCacheDir, "egress-cache-dir", "directory of the artefact cache (default: egress-cache in --cache-dir)", "WINK_EGRESS_CACHE_DIR")
	b.boolean(&opts.ssh.agent, "ssh-agent", "give the sessions an SSH_AUTH_SOCK served by this server's ssh-agent through the egress proxy, list and sign only, signatures only for allowed hosts (the keys never enter); ssh reaches port 22 of the allowed hosts; see docs/network.md", "WINK_SSH_AGENT")
	b.list(&opts.ssh.hosts, "ssh-agent-hosts", "hosts (name, *.domain or address) the --ssh-agent keys may be used for (default: every host a session may reach; repeatable)", "WINK_SSH_AGENT_HOSTS")
	b.str(&opts.ssh.knownHosts, "ssh-known-hosts", "the known_hosts the sessions' ssh trusts, read-only (default with --ssh-agent: ~/.ssh/known_hosts)", "WINK_SSH_KNOWN_HOSTS")
	b.str(&w.CABundle, "ca-bundle", "a PEM file of CAs the sessions, profile setups and the egress proxy trust besides the public roots (a TLS-inspecting proxy's, a private registry's)", "WINK_CA_BUNDLE")
	b.str(&opts.profilesFile, "profiles", "a YAML file of profiles: toolchains (image, setup commands cached as an image, env, limits, egress) sessions choose with workspace_profile or ?profile=NAME", "WINK_PROFILES")
	b.boolean(&opts.noBuiltins, "no-builtin-profiles", "offer only the profiles file's profiles, not the built-in general, python, node, go and rust", "WINK_NO_BUILTIN_PROFILES")
	b.str(&opts.detect, "detect", "what the --mount folders' language markers (go.mod, package.json, ...) do: ask (the prompt and workspace_profile name the profile that fits), auto (sessions start in it) or off", "WINK_DETECT")
	b.str(&opts.repo, "repo", "a repository every session's workspace starts with, https://HOST/PATH[#REF], cloned into /workspace/NAME through the egress proxy (its host must be in --egress; a private one's token in --credentials)", "WINK_REPO")
	b.boolean(&opts.projectImage, "project-image", "start sessions in the image the first --mount folder describes: its .devcontainer/devcontainer.json or .devcontainer.json, else its Dockerfile or Containerfile (built with --egress as the build's allowlist); see docs/devcontainer.md", "WINK_PROJECT_IMAGE")
	b.list(&opts.cdiDevices, "cdi-device", "a CDI device every session's container gets, as the host's CDI spec (in /etc/cdi or /var/run/cdi) gives it: vendor.com/class=name, such as nvidia.com/gpu=all (repeatable); checked at start and in each new container; see docs/devcontainer.md", "WINK_CDI_DEVICES")
	b.str(&w.Profile, "profile", "the profile of sessions that choose none (default: the profiles file's default:, else none)", "WINK_PROFILE")
	b.list(&opts.envPass, "env-pass", "pass this server's environment variables whose names match (* globs; repeatable) into every command; a command can read and print them", "WINK_ENV_PASS")
	b.boolean(&opts.gitIdentity, "git-identity", "give the containers git's user.name and user.email from this machine's git configuration (nothing else of it)", "WINK_GIT_IDENTITY")
	b.str(&w.NamePrefix, "name-prefix", "prefix of container names", "WINK_NAME_PREFIX")
	b.str(&w.CacheDir, "cache-dir", "directory holding session workspaces", "WINK_CACHE")
	b.boolean(&w.KeepSessionDirs, "keep-session-dirs", "keep session directories after sessions end", "WINK_KEEP_SESSION_DIRS")
	b.str(&cfg.KeptWorkspace, "workspace", "name of a kept workspace the stdio session opens, or makes: its files, checkpoints and mounted folders' changes outlive the process (HTTP clients connect to /mcp?workspace=NAME instead)", "WINK_WORKSPACE")
	b.bytes(&w.CheckpointBytes, "checkpoint-limit", "what one workspace's checkpoints may hold in all, content shared between checkpoints counted once (e.g. 4g; 0 = no limit)", "WINK_CHECKPOINT_LIMIT")
	b.int(&w.ForkLimit, "quota-forks", fmt.Sprintf("forks (workspace_fork) one client (token, OAuth subject, or the local user) may have waiting for their handles at once, each a copy of its workspace on the cache disk until claimed or expired (0 = forks off; at most %d per call)", workspace.MaxForksPerCall), "WINK_QUOTA_FORKS")
	b.bytes(&w.ForkBytes, "quota-fork-bytes", "what one client's waiting forks may take on the cache disk in all (e.g. 4g; 0 = no quota but the cache disk's free space, of which forks leave one --disk-limit, at least 256 MiB)", "WINK_QUOTA_FORK_BYTES")
	b.boolean(&cfg.Lazy, "lazy", "make a session's container on its first call that needs one, not as soon as the session starts", "WINK_LAZY")
	b.str(&opts.warm, "warm", fmt.Sprintf("containers kept made and started for new sessions, 0-%d (auto: 0 for stdio, %d for sse and http)", workspace.MaxWarm, defaultHTTPWarm), "WINK_WARM")
	b.int(&w.CreateParallelism, "create-parallelism", fmt.Sprintf("containers made at once, 1-%d (default: eight per CPU, 4-32); other sessions' containers wait their turn, reported as progress, for as long as their client waits, and --podman-timeout counts from each call's start", workspace.MaxCreateParallelism), "WINK_CREATE_PARALLELISM")
	b.int(&w.WatchDirs, "watch-dirs", fmt.Sprintf("the most directories of a workspace watched for the changes commands make, 0-%d (0: none; past it a directory is reported as possibly changed after each command)", workspace.MaxWatchDirs), "WINK_WATCH_DIRS")
	b.int(&w.InotifyShares, "inotify-shares", fmt.Sprintf("cut the host's per-user inotify instances and watches, which every workspace of one uid shares, into this many parts, 1-%d: a workspace's commands may hold one, and past it their greediest process is killed", workspace.MaxInotifyShares), "WINK_INOTIFY_SHARES")
	b.duration(&w.IdleTimeout, "idle-timeout", "remove a session's container after this long without calls (not while background jobs run, up to --max-job-age)", "WINK_IDLE_TIMEOUT")
	b.duration(&cfg.MaxCommandTimeout, "max-command-timeout", "the longest timeout_seconds podman_shell accepts (at least 1s, at most 24h)", "WINK_MAX_COMMAND_TIMEOUT")
	b.duration(&w.MaxJobAge, "max-job-age", "how long running background jobs keep an idle session's container from the idle clean-up (0: as long as they run)", "WINK_MAX_JOB_AGE")
	bindEngineFlags(b, &opts.engine)
	b.str(&opts.service.url, "podman-url", "Podman service URL (default: the root socket, then the rootless one)", "CONTAINER_HOST", "PODMAN_BASE_URL")
	b.str(&opts.service.identity, "podman-identity", "SSH key for ssh:// Podman URLs (default: the connection's)", "PODMAN_IDENTITY", "CONTAINER_SSHKEY")
	b.str(&opts.service.connection, "podman-connection", "a Podman connection (podman system connection list) whose URL and identity to use (default: the default connection, unless CONTAINER_HOST or --podman-url is set)", connectionEnvs...)
	b.str(&opts.filesOnHost, "files-on-podman-host", "auto, yes or no: each session's /workspace is a volume on the Podman host and the agent is copied there, for a service that does not share this machine's files; no folder mounts (auto: yes for ssh:// URLs)", "WINK_FILES_ON_PODMAN_HOST")
	b.pathList(&w.SharedPaths, "podman-shared-path", "a folder the Podman host sees at the same path (a podman machine sees your home); with the files on the Podman host, folders under it may be overlay or read-only mounts (repeatable)", "WINK_PODMAN_SHARED_PATHS")
	b.str(&w.AgentBinary, "agent-binary", "static Linux wink-mcp the containers run as their agent (default: this binary; for a Podman host of another system or architecture)", "WINK_AGENT_BINARY")
	b.duration(&w.APITimeout, "podman-timeout", "deadline of each Podman API call", "WINK_PODMAN_TIMEOUT")
	b.duration(&w.PullTimeout, "pull-timeout", "deadline of an image pull", "WINK_PULL_TIMEOUT")
	b.duration(&cfg.ShutdownTimeout, "shutdown-timeout", "how long a session's or the server's end waits for containers to be removed and changes exported; changes not exported by then are kept for the next start or wink-mcp export", "WINK_SHUTDOWN_TIMEOUT")
	b.str(&opts.transport, "transport", "stdio, sse (at /sse) or http (streamable HTTP at /mcp)", "WINK_TRANSPORT")
	b.str(&h.Addr, "addr", "address the sse and http transports listen on", "WINK_ADDR")
	b.str(&opts.authTokenFile, "auth-token-file", "file of bearer tokens, one a line, that HTTP clients must send", "WINK_AUTH_TOKEN_FILE")
	b.list(&h.AuthTokens, "auth-token", "a bearer token HTTP clients must send (prefer the file: flags show in ps)", "WINK_AUTH_TOKEN")
	b.str(&h.OAuth.Issuer, "oauth-issuer", "accept OAuth 2.1 access tokens (JWTs) of this authorization server instead of --auth-token: the resource-server mode of docs/oauth.md", "WINK_OAUTH_ISSUER")
	b.str(&h.OAuth.Audience, "oauth-audience", "this server's canonical URI, which tokens must name as audience (default: the URL it listens at, loopback only)", "WINK_OAUTH_AUDIENCE")
	b.list(&h.OAuth.Scopes, "oauth-scopes", "a scope every access token must carry (repeatable, or comma-separated)", "WINK_OAUTH_SCOPES")
	b.list(&h.AllowedHosts, "allowed-host", "a Host name accepted besides loopback ones (repeatable, or comma-separated)", "WINK_ALLOWED_HOSTS")
	b.list(&h.AllowedOrigins, "allowed-origin", "an Origin (scheme://host[:port]) accepted besides loopback ones (repeatable)", "WINK_ALLOWED_ORIGINS")
	b.int(&h.MaxSessions, "max-sessions", "sessions served at once over HTTP", "WINK_MAX_SESSIONS")
	b.int64(&opts.quotas.Workspaces, "quota-workspaces", "workspaces (sessions plus workspace handles) one client (token or OAuth subject) may hold at once (0 = no quota)", "WINK_QUOTA_WORKSPACES")
	b.bytes(&opts.quotas.MemoryBytes, "quota-memory", "memory limits one client's containers may hold in all, each while it exists (e.g. 8g; 0 = no quota)", "WINK_QUOTA_MEMORY")
	b.bytes(&opts.quotas.EgressBytes, "quota-egress-bytes", "bytes one client's sessions' egress proxies may carry, both ways, in any rolling 24 hours (e.g. 10g; 0 = no quota)", "WINK_QUOTA_EGRESS_BYTES")
	b.bytes(&opts.quotas.CheckpointBytes, "quota-checkpoint-bytes", "bytes the checkpoints of one client's workspaces may hold in all, kept workspaces' included: what each checkpoint adds to its workspace's deduplicated store (e.g. 2g; 0 = no quota)", "WINK_QUOTA_CHECKPOINT_BYTES")
	b.float(&opts.quotaCPUs, "quota-cpus", "CPU limits one client's containers may hold in all, each while it exists (0 = no quota)", "WINK_QUOTA_CPUS")
	b.bytes(&h.MaxBodyBytes, "max-body", "largest message: an HTTP request body or a stdio line", "WINK_MAX_BODY")
	b.duration(&h.DrainTimeout, "drain-timeout", "on SIGTERM, how long tool calls in flight may finish", "WINK_DRAIN_TIMEOUT")
	b.duration(&h.BodyTimeout, "body-timeout", "how long an HTTP request body may take to arrive", "WINK_BODY_TIMEOUT")
	b.str(&logs.level, "log-level", "debug, info, warn or error", "WINK_LOG_LEVEL")
	b.str(&logs.format, "log-format", "text or json (logs always go to stderr)", "WINK_LOG_FORMAT")
	bindObserveFlags(b, &opts.observe)
	if err := errors.Join(b.errs...); err != nil {
		return cfg, opts, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, opts, errHelp
		}
		return cfg, opts, err
	}
	if fs.NArg() > 0 {
		return cfg, opts, fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "podman-url":
			opts.service.urlFlag = true
		case "podman-connection":
			opts.service.connectionFlag = true
		case "podman-identity":
			opts.service.identityFlag = true
		}
	})
	connection, err := resolvePodmanService(&opts.service)
	if err != nil {
		return cfg, opts, err
	}
	opts.service.connection = connection
	if err := resolvePaths(w, opts.mounts); err != nil {
		return cfg, opts, err
	}
	if err := resolveWarm(&cfg, opts); err != nil {
		return cfg, opts, err
	}
	if err := resolveFilesOnHost(w, opts.filesOnHost, opts.service.url); err != nil {
		return cfg, opts, err
	}
	if err := resolveProfiles(w, opts, lookup); err != nil {
		return cfg, opts, err
	}
	if err := resolveRepo(w, opts.repo); err != nil {
		return cfg, opts, err
	}
	if err := resolveCDIDevices(w, opts.cdiDevices); err != nil {
		return cfg, opts, err
	}
	if err := resolveProject(w, &opts); err != nil {
		return cfg, opts, err
	}
	if err := resolveTrust(w, opts.credentials, lookup); err != nil {
		return cfg, opts, err
	}
	if err := resolveSSHAgent(w, opts.ssh, lookup); err != nil {
		return cfg, opts, err
	}
	if err := resolveEngine(w, opts); err != nil {
		return cfg, opts, err
	}
	if err := w.Validate(); err != nil {
		return cfg, opts, err
	}
	if cfg.MaxCommandTimeout < time.Second || cfg.MaxCommandTimeout > 24*time.Hour {
		return cfg, opts, fmt.Errorf("--max-command-timeout %s: must be between 1s and 24h", cfg.MaxCommandTimeout)
	}
	if err := resolveQuotas(&cfg, &opts); err != nil {
		return cfg, opts, err
	}
	if cfg.KeptWorkspace != "" {
		if err := checkKeptWorkspace(cfg, opts); err != nil {
			return cfg, opts, err
		}
	}
	switch opts.transport {
	case server.TransportStdio:
		if h.OAuth.Issuer != "" {
			return cfg, opts, errors.New("--oauth-issuer protects the HTTP transports: pass --transport http (or sse) with it")
		}
		if h.MaxBodyBytes < 64<<10 {
			return cfg, opts, fmt.Errorf("max body %d must be at least 64 KiB", h.MaxBodyBytes)
		}
	case server.TransportSSE, server.TransportHTTP:
		if opts.authTokenFile != "" {
			tokens, err := readTokenFile(opts.authTokenFile)
			if err != nil {
				return cfg, opts, err
			}
			h.AuthTokens = append(h.AuthTokens, tokens...)
		}
		if err := h.Validate(); err != nil {
			return cfg, opts, err
		}
	default:
		return cfg, opts, fmt.Errorf("transport %q: want stdio, sse or http", opts.transport)
	}
	return cfg, opts, nil
}

// resolveProfiles reads the profiles file, the variables --env-pass
// passes and the git identity.
func resolveProfiles(w *workspace.Config, opts serveOptions, lookup func(string) (string, bool)) error {
	if opts.profilesFile != "" {
		f, err := profiles.Load(expandHome(opts.profilesFile), lookup)
		if err != nil {
			return err
		}
		w.Profiles = f
		var errs []error
		for _, p := range f.All() {
			for _, spec := range p.Mounts {
				m, err := parseMount(spec.Spec)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s:%d: profile %q: mounts: %w", f.Path, spec.Line, p.Name, err))
					continue
				}
				if w.ProfileMounts == nil {
					w.ProfileMounts = map[string][]workspace.Mount{}
				}
				w.ProfileMounts[p.Name] = append(w.ProfileMounts[p.Name], m)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if !opts.noBuiltins && opts.engine.name != engineKubernetes {
		builtin, unavailable := builtinProfiles(lookup, w.CacheDir)
		for _, u := range unavailable {
			slog.Info("a built-in profile is not offered", "profile", u.Name, "reason", u.Reason)
		}
		w.Profiles = profiles.WithBuiltins(builtin, w.Profiles)
	}
	if w.Profile != "" && w.Profiles == nil {
		return fmt.Errorf("--profile %s: no profiles file is given; pass --profiles FILE", w.Profile)
	}
	if err := checkDetectMode(opts.detect); err != nil {
		return err
	}
	detectMode := opts.detect
	if opts.projectImage {
		detectMode = detectOff // --project-image says which container: nothing is guessed
	}
	if err := detectProfile(w, detectMode); err != nil {
		return err
	}
	if len(opts.envPass) > 0 {
		passed, err := workspace.PassEnv(opts.envPass, os.Environ())
		if err != nil {
			return err
		}
		w.PassedEnv = passed
	}
	if opts.gitIdentity {
		id, err := workspace.ReadGitIdentity(context.Background())
		if err != nil {
			return err
		}
		w.GitIdentity = id
	}
	return nil
}

// checkKeptWorkspace checks --workspace against the other settings.
func checkKeptWorkspace(cfg server.Config, opts serveOptions) error {
	if err := workspace.CheckWorkspaceName(cfg.KeptWorkspace); err != nil {
		return fmt.Errorf("--workspace: %w", err)
	}
	switch {
	case opts.transport != server.TransportStdio:
		return fmt.Errorf("--workspace names the workspace of the one stdio session; over %s each client names its own in the URL (%s?workspace=%s)",
			opts.transport, map[string]string{server.TransportHTTP: "/mcp", server.TransportSSE: "/sse"}[opts.transport], cfg.KeptWorkspace)
	case cfg.Workspace.Warm > 0:
		return fmt.Errorf("--workspace with --warm %d: a kept workspace's container is made on its own files, never taken from the pool; drop --warm", cfg.Workspace.Warm)
	case cfg.Workspace.FilesOnEngineHost && opts.engine.name != engineKubernetes: // the cluster keeps them (engine.KeptStore)
		return errors.New("--workspace keeps the session's files on this machine, and --files-on-podman-host keeps them on the Podman host; drop one of them")
	}
	return nil
}

// defaultHTTPWarm is --warm auto over SSE and HTTP: two containers ready
// serve an orchestrator's sessions that start together or call at once,
// and cost about 45 MB (22 MB each, measured) and no work but a ping
// every 5 s while they wait.
const defaultHTTPWarm = 2

// resolveWarm sets the pool size from --warm and the transport.
func resolveWarm(cfg *server.Config, opts serveOptions) error {
	w := &cfg.Workspace
	stdio := opts.transport == server.TransportStdio
	switch {
	case opts.warm == "auto" && stdio:
		w.Warm = 0
	case opts.warm == "auto":
		w.Warm = min(defaultHTTPWarm, cfg.HTTP.MaxSessions)
		if w.MountRoots || w.KeepSessionDirs {
			w.Warm = 0 // a pool cannot serve them; say so only when asked for one
		}
	default:
		n, err := strconv.Atoi(opts.warm)
		if err != nil {
			return fmt.Errorf("--warm %q: want a number of containers, 0-%d, or auto", opts.warm, workspace.MaxWarm)
		}
		w.Warm = n
	}
	switch {
	case stdio && w.Warm > 0:
		return fmt.Errorf("--warm %d: a stdio server has one session, whose container is made as the session starts; use --warm 0 (or auto)", w.Warm)
	case !stdio && w.Warm > cfg.HTTP.MaxSessions:
		return fmt.Errorf("--warm %d is more than --max-sessions %d: the extra containers could never be used; lower --warm or raise --max-sessions", w.Warm, cfg.HTTP.MaxSessions)
	}
	return nil
}

// resolveFilesOnHost sets Config.FilesOnEngineHost from
// --files-on-podman-host: auto keeps the files on a Podman host reached
// over ssh (podmanURL), which cannot see this machine's.
func resolveFilesOnHost(w *workspace.Config, value, podmanURL string) error {
	switch strings.ToLower(value) {
	case "auto":
		w.FilesOnEngineHost = strings.HasPrefix(podmanURL, "ssh://")
	case "yes", "true", "1":
		w.FilesOnEngineHost = true
	case "no", "false", "0":
		w.FilesOnEngineHost = false
	default:
		return fmt.Errorf("--files-on-podman-host %q: want auto, yes or no", value)
	}
	return nil
}

// resolvePaths parses the mounts and makes the paths a client may pass
// unexpanded ("~/...") or relative usable.
func resolvePaths(w *workspace.Config, mounts []string) error {
	var errs []error
	for _, spec := range mounts {
		m, err := parseMount(spec)
		errs = append(errs, err)
		if err == nil {
			w.Mounts = append(w.Mounts, m)
		}
	}
	for i, r := range w.AllowedRoots {
		w.AllowedRoots[i] = expandHome(r)
	}
	for i, r := range w.SharedPaths {
		w.SharedPaths[i] = expandHome(r)
	}
	if w.ExportDir != "" {
		dir, err := filepath.Abs(expandHome(w.ExportDir))
		errs = append(errs, err)
		w.ExportDir = dir
	}
	return errors.Join(errs...)
}

// readTokenFile reads bearer tokens, one a line; blank lines and lines
// starting with # are skipped.
func readTokenFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the auth token file: %w", err)
	}
	var tokens []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			tokens = append(tokens, line)
		}
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("the auth token file %s holds no token", path)
	}
	return tokens, nil
}

// newLogger returns a slog logger writing to w.
func newLogger(w io.Writer, o logOptions) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", o.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", o.format)
}

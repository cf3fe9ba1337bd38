package doctor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// Bounds of the checks.
const (
	// containerCheckTimeout bounds starting, probing and removing the test container.
	containerCheckTimeout = 2 * time.Minute
	// lowDiskBytes is the free space under the cache directory below which doctor warns.
	lowDiskBytes = 1 << 30
	// oldestPodmanMajor is the oldest Podman major version wink-mcp is tested with.
	oldestPodmanMajor = 4
)

// doctor runs the checks in order; later checks read what earlier ones found.
type doctor struct {
	cfg  workspace.Config
	log  *slog.Logger
	svc  *workspace.Service
	host host

	agentOK  bool
	info     *workspace.ServiceInfo // set once the service answered
	imageOK  bool
	mountsOK bool
	// diskOwn says each session's /workspace is its own filesystem (the
	// disk limit is on and this host can enforce it).
	diskOwn bool
	// network is what the engine found of the policy that cuts off a
	// Pod's network (engine.Service.Pods); nil otherwise.
	network *engine.NetworkPolicy
	// oauthIssuer is the authorization server to check; "": none.
	oauthIssuer string
}

type check struct {
	name string
	run  func(context.Context) Result
}

func (d *doctor) checks() []check {
	permissions := []check{}
	if d.pods() {
		permissions = append(permissions, check{"permissions", d.podPermissions})
	}
	return slices.Concat([]check{
		{"agent binary", d.agentBinary},
		{"cache dir", d.cacheDir},
		{"disk limit", d.diskLimit},
		{"podman", d.podmanCLI},
		{"service", d.service},
	}, permissions, []check{
		{"runtime", d.runtime},
		{"storage", d.storage},
		{"ulimits", d.ulimits},
		{"watch", d.watch},
		{"image", d.image},
		{"profiles", d.profiles},
		{"mounts", d.mounts},
		{"egress", d.egress},
		{"credentials", d.trust},
		{"egress cache", d.egressCache},
		{"ssh-agent", d.sshAgent},
		{"checkpoints", d.checkpoints},
		{"forks", d.forks},
		{"cdi devices", d.cdi},
		{"processes", d.processes},
		{"container", d.container},
	})
}

func (d *doctor) agentBinary(context.Context) Result {
	path, err := workspace.ResolveAgentBinary(d.cfg.AgentBinary)
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(), Fix: "build a static binary: `make build`, or the README's install command (CGO_ENABLED=0)"}
	}
	d.agentOK = true
	return Result{Status: OK, Detail: path + " is statically linked, so it runs as init in any image"}
}

func (d *doctor) cacheDir(context.Context) Result {
	dir := d.cfg.CacheDir
	fix := "pass --cache-dir (WINK_CACHE) pointing at a writable directory on a local disk"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Result{Status: Fail, Detail: fmt.Sprintf("cannot create %s: %v", dir, err), Fix: fix}
	}
	f, err := os.CreateTemp(dir, "doctor-*")
	if err == nil {
		_, err = f.WriteString("wink-mcp doctor\n")
		f.Close()
		os.Remove(f.Name())
	}
	if err != nil {
		return Result{Status: Fail, Detail: fmt.Sprintf("cannot write in %s: %v", dir, err), Fix: fix}
	}
	free, err := d.host.freeBytes(dir)
	if err != nil {
		return Result{Status: OK, Detail: fmt.Sprintf("%s is writable (free space unknown: %v)", dir, err)}
	}
	if free < lowDiskBytes {
		return Result{Status: Warn, Detail: fmt.Sprintf("%s is writable but has only %d MiB free; sessions' files live here", dir, free>>20),
			Fix: "free some space, or pass --cache-dir on a larger disk"}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("%s is writable (%d GiB free)", dir, free>>30)}
}

// diskLimit checks that each session's files can be bounded as configured,
// and that the cache disk has room for one full session.
func (d *doctor) diskLimit(context.Context) Result {
	limit := d.cfg.Limits.DiskBytes
	if limit == 0 {
		return Result{Status: Warn, Detail: "off (--disk-limit 0): one session can fill the disk holding " + d.cfg.CacheDir,
			Fix: "pass --disk-limit with a size (2g is the default)"}
	}
	if d.cfg.FilesOnEngineHost && d.cfg.Engine.Service().BoundsDisk {
		return Result{Status: OK, Detail: fmt.Sprintf("each session's files are bounded to %d MiB by the engine's service itself", limit>>20)}
	}
	if d.cfg.FilesOnEngineHost {
		return Result{Status: Warn, Detail: "not enforced: each session's files are a volume on the Podman host (--files-on-podman-host), which wink-mcp cannot bound",
			Fix: "watch the Podman host's disk, or use a Podman service on this machine; --disk-limit 0 says you accept it"}
	}
	if err := d.host.diskLimitSupport(); err != nil {
		detail, fix, _ := strings.Cut(err.Error(), "; ")
		return Result{Status: Warn, Detail: detail + "; sessions will run without it", Fix: fix}
	}
	d.diskOwn = true
	free, err := d.host.freeBytes(d.cfg.CacheDir)
	switch {
	case err != nil:
		return Result{Status: Fail, Detail: fmt.Sprintf("cannot read the free space under %s: %v", d.cfg.CacheDir, err), Fix: "pass --cache-dir on a local disk"}
	case free < uint64(limit):
		return Result{Status: Fail, Detail: fmt.Sprintf("%s has %d MiB free, less than one session's disk limit of %d MiB, so every session would be refused",
			d.cfg.CacheDir, free>>20, limit>>20), Fix: "free space there, pass --cache-dir on a larger disk, or lower --disk-limit"}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("each session's files get an ext4 filesystem of %d MiB, loop-mounted from a sparse image in %s (%d GiB free)",
		limit>>20, d.cfg.CacheDir, free>>30)}
}

func (d *doctor) podmanCLI(ctx context.Context) Result {
	if d.pods() {
		return Result{Status: OK, Detail: "not needed: each workspace is a Pod of the cluster"}
	}
	path, version, err := d.host.podmanVersion(ctx)
	switch {
	case path == "" && d.cfg.Engine.Service().Remote:
		return Result{Status: OK, Detail: "not installed here; the service at " + d.cfg.Engine.Service().Address + " is used"}
	case path == "":
		return Result{Status: Fail, Detail: "podman is not installed (not found in PATH)",
			Fix: "install Podman and runc (Debian/Ubuntu: `sudo apt-get install -y podman runc`; or `make setup`), or pass --podman-url for a remote service"}
	case err != nil:
		return Result{Status: Fail, Detail: fmt.Sprintf("%s --version failed: %v %s", path, err, version), Fix: "reinstall Podman"}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("%s (%s)", version, path)}
}

func (d *doctor) service(ctx context.Context) Result {
	info, err := d.svc.Info(ctx)
	if err != nil {
		fix := d.svc.ServiceFix()
		detail, _, _ := strings.Cut(err.Error(), ". "+fix)
		return Result{Status: Fail, Detail: detail, Fix: fix}
	}
	d.info = &info
	if d.pods() {
		return Result{Status: OK, Detail: fmt.Sprintf("the Kubernetes API server %s answers: Kubernetes %s", info.URI, info.Version)}
	}
	mode := "rootful"
	if info.Rootless {
		mode = "rootless"
	}
	detail := fmt.Sprintf("%s answers: Podman %s, API %s, %s", info.URI, info.Version, info.APIVersion, mode)
	if major, err := strconv.Atoi(strings.SplitN(info.Version, ".", 2)[0]); err == nil && major < oldestPodmanMajor {
		return Result{Status: Warn, Detail: detail, Fix: fmt.Sprintf("wink-mcp is tested with Podman %d.3 and later; upgrade if containers misbehave", oldestPodmanMajor)}
	}
	return Result{Status: OK, Detail: detail}
}

func (d *doctor) runtime(context.Context) Result {
	if d.info == nil {
		return skipped("the service")
	}
	if d.pods() {
		return podRuntime(d.info.Description)
	}
	r := runtimeResult(d.info.DefaultRuntime, d.host.cgroupLayout(), d.info.Remote)
	if r.Status != OK {
		return r
	}
	return limitsResult(r, d.info.Unenforced, d.cfg.AllowUnenforcedLimits)
}

// limitsResult adds to an ok runtime line what the service cannot limit:
// a failure, the containers being refused, unless the configuration
// accepts running without those limits, a warning then.
func limitsResult(r Result, u workspace.Unenforced, allowed bool) Result {
	switch {
	case u.Limits == "":
		r.Detail += "; memory, CPU and process limits enforced"
	case allowed:
		r.Status = Warn
		r.Detail += fmt.Sprintf("; NO %s LIMIT (--allow-unenforced-limits): %s", strings.ToUpper(u.Limits), u.Why)
		r.Fix = u.Fix
	default:
		r.Status = Fail
		r.Detail += fmt.Sprintf("; every container would be refused, as it could have no %s limit: %s", u.Limits, u.Why)
		r.Fix = u.Fix + ", " + workspace.AllowUnenforced
	}
	return r
}

// storage warns about the vfs driver: each container copies its whole
// image, which costs seconds and the image's size in disk per session.
func (d *doctor) storage(context.Context) Result {
	if d.info == nil {
		return skipped("the service")
	}
	if d.pods() {
		return Result{Status: OK, Detail: "images are the nodes': each kubelet pulls and stores them"}
	}
	if d.info.GraphDriver == "vfs" {
		return Result{Status: Warn, Detail: "images are stored with vfs: each session's container copies the whole image (seconds, and its size in disk, per session)",
			Fix: "use the overlay driver: driver = \"overlay\" in storage.conf (rootless: ~/.config/containers/storage.conf, with fuse-overlayfs on kernels before 5.13), then `podman system reset` (which deletes that user's images and containers)"}
	}
	return Result{Status: OK, Detail: "images are stored with " + orDefault(d.info.GraphDriver, "an unnamed driver")}
}

// runtimeResult judges the service's OCI runtime, which every container
// uses (the REST API has no per-container choice), against the host's
// cgroup layout: crun cannot start containers when cgroups are hybrid.
func runtimeResult(runtime, layout string, remote bool) Result {
	if remote {
		return Result{Status: OK, Detail: runtime + "; the service runs on another host, the container check tries it"}
	}
	if layout == cgroupsHybrid && runtime == "crun" {
		return Result{Status: Fail,
			Detail: "the service uses crun, which cannot start containers here: cgroups are " + layout,
			Fix:    "install runc, set runtime = \"runc\" under [engine] in /etc/containers/containers.conf, and restart the Podman service (`make setup` does all three)"}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("%s; cgroups %s", runtime, layout)}
}

func (d *doctor) ulimits(context.Context) Result {
	if d.pods() {
		return podUlimits()
	}
	if d.info != nil && d.info.Remote {
		return Result{Status: OK, Detail: fmt.Sprintf("nofile=%d nproc=%d are set on each container; the container check tries them on the remote host", d.cfg.NofileLimit, d.cfg.NprocLimit)}
	}
	nofile, nproc, err := d.host.hardLimits()
	if err != nil {
		return Result{Status: Warn, Detail: "cannot read this host's hard limits: " + err.Error()}
	}
	return ulimitsResult(d.cfg.Limits, nofile, nproc)
}

// ulimitsResult checks the limits set on each container against the host's
// hard limits, which Podman cannot raise them above.
func ulimitsResult(l engine.Limits, nofileHard, nprocHard uint64) Result {
	var over []string
	if l.NofileLimit > nofileHard {
		over = append(over, fmt.Sprintf("--nofile %d is above the hard limit %d (`ulimit -Hn`)", l.NofileLimit, nofileHard))
	}
	if l.NprocLimit > nprocHard {
		over = append(over, fmt.Sprintf("--nproc %d is above the hard limit %d (`ulimit -Hu`)", l.NprocLimit, nprocHard))
	}
	if len(over) > 0 {
		return Result{Status: Fail, Detail: strings.Join(over, "; "), Fix: "lower --nofile and --nproc to at most the host's hard limits, or raise those limits"}
	}
	return Result{Status: OK, Detail: fmt.Sprintf("each container gets nofile=%d nproc=%d explicitly, within the host's hard limits (%s, %s)",
		l.NofileLimit, l.NprocLimit, limitText(nofileHard), limitText(nprocHard))}
}

func (d *doctor) watch(context.Context) Result {
	shares := max(1, d.cfg.InotifyShares) // a config not made by DefaultConfig has none
	guard := fmt.Sprintf("each workspace's commands may hold 1/%d of the host's per-user inotify instances and watches (--inotify-shares), "+
		"which every workspace of one uid shares: past it the agent kills their greediest process", shares)
	if d.cfg.WatchDirs == 0 {
		return Result{Status: OK, Detail: "--watch-dirs 0: nothing is watched; after each command, subscribers hear that anything may have changed; " + guard}
	}
	if d.pods() {
		return Result{Status: OK, Detail: fmt.Sprintf("each workspace watches up to %d directories, within its node's fs.inotify limits, which are not read from here; %s", d.cfg.WatchDirs, guard)}
	}
	if d.info != nil && d.info.Remote {
		return Result{Status: OK, Detail: fmt.Sprintf("each workspace watches up to %d directories, within the Podman host's fs.inotify limits, which are not read from here; %s", d.cfg.WatchDirs, guard)}
	}
	watches, instances, err := d.host.inotifyLimits()
	if err != nil {
		return Result{Status: Warn, Detail: "cannot read this host's inotify limits: " + err.Error() + "; " + guard}
	}
	return watchResult(d.cfg.WatchDirs, shares, watches, instances)
}

// watchResult compares --watch-dirs and --inotify-shares with the host's
// inotify limits, which every container of one user shares: each
// workspace's watch takes one instance and a watch per directory, and its
// commands may take a 1/shares part besides.
func watchResult(dirs, shares int, watches, instances uint64) Result {
	shareInstances, shareWatches := max(1, instances/uint64(shares)), max(1, watches/uint64(shares))
	full := min(instances/(1+shareInstances), watches/(uint64(dirs)+shareWatches))
	detail := fmt.Sprintf("this host allows each user %d inotify instances and %d watches, shared by all its containers; "+
		"each workspace's watch takes 1 instance and up to %d watches (--watch-dirs), and its commands may hold %d instances and %d watches (1/%d, --inotify-shares; past it the agent kills their greediest process): "+
		"at least %d workspaces of %d directories are watched in full at once, even with every one's commands holding their share; "+
		"a watch the limits refuse tries again every second, and meanwhile its directories are reported as possibly changed after each command",
		instances, watches, dirs, shareInstances, shareWatches, shares, full, dirs)
	if full == 0 || instances < 16 {
		return Result{Status: Warn, Detail: detail, Fix: "raise fs.inotify.max_user_watches and max_user_instances (sysctl -w), or lower --watch-dirs or raise --inotify-shares; " +
			"past the limits a directory's changes are reported as possibly changed after each command"}
	}
	return Result{Status: OK, Detail: detail}
}

func (d *doctor) image(ctx context.Context) Result {
	if d.info == nil {
		return skipped("the service")
	}
	start := time.Now()
	image, pulled, err := d.svc.EnsureImage(ctx)
	switch {
	case errors.Is(err, engine.ErrImageUnavailable):
		detail, _, _ := strings.Cut(err.Error(), ". "+workspace.ImageRemedy)
		return Result{Status: Fail, Detail: detail, Fix: workspace.ImageRemedy}
	case err != nil:
		return Result{Status: Fail, Detail: err.Error(), Fix: "check the service's storage with `podman images`"}
	}
	d.imageOK = true
	detail := image + " is present"
	if pulled {
		detail = fmt.Sprintf("%s was missing and has been pulled in %s", image, time.Since(start).Round(time.Second))
	}
	return Result{Status: OK, Detail: detail + imageWhy(d.cfg, image)}
}

// imageWhy says why a server with cfg uses image.
func imageWhy(cfg workspace.Config, image string) string {
	choices := cfg.ImageChoices()
	switch {
	case cfg.Image != "":
		return "; it is --image (WINK_IMAGE)"
	case image == choices[0]:
		return "; a server without --image uses it, the image `make setup` builds"
	default:
		return fmt.Sprintf("; a server without --image uses it because %s is absent (`make setup` builds it)", choices[0])
	}
}

func skipped(needs string) Result {
	return Result{Status: Skip, Detail: "not checked: needs " + needs}
}

func limitText(v uint64) string {
	if v == ^uint64(0) { // RLIM_INFINITY
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

func (d *doctor) mounts(context.Context) Result {
	if len(d.cfg.Mounts) == 0 && !d.cfg.MountRoots {
		d.mountsOK = true
		return Result{Status: Skip, Detail: "no host folder to mount (--mount, --mount-roots)"}
	}
	mounts, user, err := d.cfg.CheckMounts()
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(), Fix: "serve refuses to start with these mounts; change them as the message says"}
	}
	d.mountsOK = true
	var parts []string
	for _, m := range mounts {
		parts = append(parts, fmt.Sprintf("%s at /workspace/%s (%s)", m.HostPath, m.Path, m.Mode))
	}
	if d.cfg.MountRoots {
		parts = append(parts, "the client's roots under "+strings.Join(d.cfg.AllowedRoots, ", "))
	}
	return Result{Status: OK, Detail: strings.Join(parts, "; ") + "; the workspace runs as " + user}
}

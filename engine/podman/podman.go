//go:build containers_image_openpgp

package podman

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containers/podman/v5/libpod/define"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/errorhandling"
	"golang.org/x/sync/singleflight"

	"github.com/wink-mcp/wink-mcp/engine"
)

// connectTimeout bounds one attempt to reach a Podman service.
const connectTimeout = 5 * time.Second

// ServiceRemedy says how to get a Podman service to answer; the error of
// an unreachable service ends with it.
const ServiceRemedy = "Start it: `sudo systemctl enable --now podman.socket` (root), " +
	"`systemctl --user enable --now podman.socket` (rootless), or `podman system service --time=0 &`; " +
	"or point CONTAINER_HOST (--podman-url) at a running service"

// The engine-neutral errors in this engine's words: the texts users read
// name the Podman service, while callers still find the sentinels.
var (
	errUnreachable = engine.Worded(engine.ErrUnreachable, "cannot reach the Podman service")
	errSlow        = engine.Worded(engine.ErrSlow, "the Podman service did not answer")
)

// Engine drives the Podman service through its REST API. It connects
// on first use and is safe for concurrent use.
type Engine struct {
	url, identity string
	machine       bool      // url is a podman machine's
	tls           [3]string // client certificate, key and CA files
	cacheDir      string    // where host facts are recorded for the next process
	apiTimeout    time.Duration
	pullTimeout   time.Duration
	log           *slog.Logger

	mu      sync.Mutex
	uri     string            // the service that answered
	connCtx context.Context   // carries the bindings connection
	host    *engine.HostFacts // asked once (see hostfacts.go)
	// asking lets one caller at a time ask for the host facts, so a burst
	// of first sessions asks the service once, not once each.
	asking sync.Mutex
	// agentMu guards agentImages: by workspace image and agent binary, the
	// image made with the agent copied in (see remote.go).
	agentMu     sync.Mutex
	agentImages map[string]string
	// pulls remembers failed pulls, so that calls do not each wait for
	// the next one (see pullbackoff.go); pulling lets the calls that need
	// an image at the same time share one pull of it.
	pulls   pullFailures
	pulling singleflight.Group
	// tunnels are the containers' tunnel sockets (see tunnelsock.go), nil
	// without a cache directory.
	tunnels *tunnelSockets
}

// Options say which Podman service an Engine drives, and how.
type Options struct {
	// URL is the service; "" tries the root socket, then the rootless one
	// under $XDG_RUNTIME_DIR.
	URL string
	// Identity is the SSH key for ssh:// URLs.
	Identity string
	// Machine says URL is a podman machine's (its connection says so).
	Machine bool
	// TLSCert, TLSKey and TLSCA are the client certificate, its key and
	// the CA of a tcp:// service; "" for none.
	TLSCert, TLSKey, TLSCA string
	// CacheDir is where the host facts are recorded for the next process.
	CacheDir string
	// APITimeout bounds each API call, PullTimeout an image pull.
	APITimeout, PullTimeout time.Duration
}

// New returns an Engine for the service opts name; it connects on first use.
func New(opts Options, log *slog.Logger) *Engine {
	return &Engine{url: opts.URL, cacheDir: opts.CacheDir, identity: opts.Identity, machine: opts.Machine, tls: [3]string{opts.TLSCert, opts.TLSKey, opts.TLSCA},
		apiTimeout: opts.APITimeout, pullTimeout: opts.PullTimeout, log: log, tunnels: newTunnelSockets(tunnelBase(opts.CacheDir))}
}

// Service returns the URL the engine was given ("" for the local sockets)
// and whether it leaves this host's Unix sockets.
func (e *Engine) Service() engine.Service {
	return engine.Service{Address: e.url, Remote: e.url != "" && !strings.HasPrefix(e.url, "unix://"), TunnelSockets: e.tunnels != nil}
}

// ServiceFix returns ServiceRemedy.
func (e *Engine) ServiceFix() string { return ServiceRemedy }

// candidateURIs lists the services to try, in order: the configured one,
// else the root socket, then the rootless one.
func candidateURIs(configured, runtimeDir string) []string {
	if configured != "" {
		return []string{configured}
	}
	uris := []string{"unix:///run/podman/podman.sock"}
	if runtimeDir != "" {
		uris = append(uris, "unix://"+runtimeDir+"/podman/podman.sock")
	}
	return uris
}

// connect returns the connection context, connecting first if needed.
func (e *Engine) connect(ctx context.Context) (context.Context, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.connCtx != nil {
		return e.connCtx, nil
	}
	var tried []string
	for _, uri := range candidateURIs(e.url, os.Getenv("XDG_RUNTIME_DIR")) {
		connCtx, err := e.dial(ctx, uri)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", uri, err))
			continue
		}
		e.uri, e.connCtx = uri, connCtx
		e.log.Info("connected to podman", "uri", uri, "api_version", bindings.ServiceVersion(connCtx).String())
		return connCtx, nil
	}
	return nil, fmt.Errorf("%w (tried %s). %s. `wink-mcp doctor` checks the whole set-up",
		errUnreachable, strings.Join(tried, "; "), ServiceRemedy)
}

// dial opens a connection to uri. The connection outlives ctx; ctx only
// bounds the attempt.
func (e *Engine) dial(ctx context.Context, uri string) (context.Context, error) {
	attempt, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	type result struct {
		ctx context.Context
		err error
	}
	done := make(chan result, 1)
	go func() {
		// NewConnection keeps the context it is given for later calls, so it
		// gets a background one; the attempt is bounded from outside.
		c, err := bindings.NewConnectionWithOptions(context.Background(), bindings.Options{URI: uri, Identity: e.identity, Machine: e.machine,
			TLSCertFile: e.tls[0], TLSKeyFile: e.tls[1], TLSCAFile: e.tls[2]})
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.ctx, r.err
	case <-attempt.Done():
		return nil, fmt.Errorf("no answer within %s", connectTimeout)
	}
}

// call returns a context for one API call, bounded by the API deadline, and
// the function that ends it (see within).
func (e *Engine) call(ctx context.Context) (context.Context, func(*error), error) {
	connCtx, err := e.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	c, end := within(ctx, connCtx, e.apiTimeout)
	return c, end, nil
}

// within returns a context for one API call on the connection in connCtx,
// with ctx's cancellation and a deadline of timeout (--podman-timeout), and
// the function that ends the call: it releases the context and, when the
// deadline (not ctx) cut the call short, rewrites *err to say the service
// did not answer in time.
func within(ctx, connCtx context.Context, timeout time.Duration) (context.Context, func(*error)) {
	c, cancel := context.WithTimeout(valuesFrom{Context: ctx, values: connCtx}, timeout)
	return c, func(err *error) {
		if *err != nil && ctx.Err() == nil && errors.Is(c.Err(), context.DeadlineExceeded) {
			*err = fmt.Errorf("%w within %s, so it is stopped or overloaded (%v). `wink-mcp doctor` checks it; if it is only slow, raise --podman-timeout",
				errSlow, timeout, *err)
		}
		cancel()
	}
}

// valuesFrom is a context with the deadline and cancellation of Context and
// the values of values: the bindings find their connection in a context
// value, while the caller's context must be able to cancel the call.
type valuesFrom struct {
	context.Context
	values context.Context
}

func (c valuesFrom) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// EnsureImage returns the first of choices the service has, or pulls the
// last, logging progress.
func (e *Engine) EnsureImage(ctx context.Context, choices []string) (string, error) {
	image, _, err := e.ChooseImage(ctx, choices)
	return image, err
}

// ChooseImage is EnsureImage, also saying whether it pulled.
func (e *Engine) ChooseImage(ctx context.Context, choices []string) (image string, pulled bool, err error) {
	for _, image := range choices {
		exists, err := e.imageExists(ctx, image)
		if err != nil || exists {
			return image, false, err
		}
	}
	image = choices[len(choices)-1]
	if err := e.pull(ctx, image); err != nil {
		absent := "image " + image + " is not present and pulling it failed"
		if len(choices) > 1 {
			absent = "none of " + strings.Join(choices, ", ") + " is present (without --image the first present is used) and pulling " + image + " failed"
		}
		return image, false, fmt.Errorf("%w: %s: %v", engine.ErrImageUnavailable, absent, err)
	}
	return image, true, nil
}

// pull pulls image, unless a failed pull of it is still backing off.
// Calls that need the image meanwhile wait for the same pull, which goes
// on (up to --pull-timeout) when they give up, for the calls after them.
func (e *Engine) pull(ctx context.Context, image string) error {
	if err := e.pulls.refused(image); err != nil {
		return err
	}
	done := e.pulling.DoChan(image, func() (any, error) {
		err := e.pullNow(context.WithoutCancel(ctx), image)
		if !errors.Is(err, engine.ErrUnreachable) {
			e.pulls.record(image, err)
		}
		return nil, err
	})
	select {
	case r := <-done:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pullNow pulls image.
func (e *Engine) pullNow(ctx context.Context, image string) error {
	e.log.Info("pulling image", "image", image)
	start := time.Now()
	connCtx, err := e.connect(ctx)
	if err != nil {
		return err
	}
	c, cancel := context.WithTimeout(valuesFrom{Context: ctx, values: connCtx}, e.pullTimeout)
	defer cancel()
	var progress io.Writer = &lineLogger{log: e.log, msg: "pull progress", attrs: []any{"image", image}}
	if _, err := images.Pull(c, image, new(images.PullOptions).WithProgressWriter(progress).WithPolicy("missing")); err != nil {
		if ctx.Err() == nil && errors.Is(c.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("not done within --pull-timeout (%s): %w", e.pullTimeout, err)
		}
		return err
	}
	e.log.Info("image pulled", "image", image, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// imageExists says whether the service has image.
func (e *Engine) imageExists(ctx context.Context, image string) (exists bool, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return false, err
	}
	defer end(&err)
	exists, err = images.Exists(c, image, nil)
	if err != nil {
		return false, fmt.Errorf("checking image %s: %w", image, err)
	}
	return exists, nil
}

// Create creates the container described by spec: from an image with the
// agent copied in, and on its workspace volume, when spec asks. On SELinux
// hosts, bind mounts are relabelled so the container may read them.
func (e *Engine) Create(ctx context.Context, spec engine.Spec) (err error) {
	if spec.CopyAgent {
		if spec.Image, err = e.agentImage(ctx, spec.Image, spec.AgentBinary, spec.Labels); err != nil {
			return err
		}
	}
	if spec.WorkspaceVolume != "" {
		if err := e.ensureVolume(ctx, spec); err != nil {
			return err
		}
	}
	c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	tunnelDir := ""
	if !spec.CopyAgent && e.tunnels != nil {
		// The agent is bind-mounted from this machine, so its files are
		// shared: the tunnel may ride a socket (see tunnelsock.go).
		if tunnelDir, err = e.tunnels.prepare(spec.Name); err != nil {
			e.log.Warn("the tunnel rides the exec attach", "container", spec.Name, "err", err)
			tunnelDir = ""
		}
	}
	s := podmanSpec(spec, tunnelDir)
	if spec.SELinux {
		relabel(s)
	}
	created, err := containers.CreateWithSpec(c, s, nil)
	if err != nil {
		if isStatus(err, http.StatusConflict) || strings.Contains(err.Error(), "already in use") {
			return fmt.Errorf("creating container %s: %w", spec.Name, engine.ErrNameInUse)
		}
		return fmt.Errorf("creating container %s: %w", spec.Name, err)
	}
	// Podman warns when it drops part of a spec (limits on rootless cgroups
	// v1); the check below refuses what matters, and the log keeps the rest.
	for _, w := range created.Warnings {
		e.log.Warn("Podman warned creating a container", "container", spec.Name, "warning", w)
	}
	data, err := containers.Inspect(c, spec.Name, nil)
	if err == nil {
		err = checkEffective(spec, tunnelDir, data)
	}
	if err != nil {
		if _, rmErr := containers.Remove(c, spec.Name, new(containers.RemoveOptions).WithForce(true).WithVolumes(true)); rmErr != nil {
			e.log.Warn("removing a container refused after creation", "container", spec.Name, "err", rmErr)
		}
		if tunnelDir != "" {
			e.tunnels.remove(spec.Name)
		}
		return fmt.Errorf("refusing container %s: %w. Check the Podman service's containers.conf and the image; `wink-mcp doctor` checks the set-up", spec.Name, err)
	}
	return nil
}

// Start starts a created container.
func (e *Engine) Start(ctx context.Context, name string) (err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	if err := containers.Start(c, name, nil); err != nil {
		return fmt.Errorf("starting container %s: %w. If the image is at fault, `wink-mcp doctor --image IMAGE` tries it", name, err)
	}
	return nil
}

// Running inspects the container.
func (e *Engine) Running(ctx context.Context, name string) (_, _ bool, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return false, false, err
	}
	defer end(&err)
	data, err := containers.Inspect(c, name, nil)
	if isGone(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("inspecting container %s: %w", name, err)
	}
	return true, data.State != nil && data.State.Running, nil
}

// Remove force-removes the container and its volumes without waiting for it to stop.
func (e *Engine) Remove(ctx context.Context, name string) (err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	_, err = containers.Remove(c, name, new(containers.RemoveOptions).WithForce(true).WithVolumes(true).WithTimeout(0))
	if err != nil && !isGone(err) {
		return fmt.Errorf("removing container %s: %w", name, err)
	}
	if e.tunnels != nil {
		e.tunnels.remove(name)
	}
	return nil
}

// List returns every container labelled managedLabel=true, in any state.
func (e *Engine) List(ctx context.Context, managedLabel string) (_ []engine.Listed, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	found, err := containers.List(c, new(containers.ListOptions).WithAll(true).
		WithFilters(map[string][]string{"label": {managedLabel + "=true"}}))
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := make([]engine.Listed, 0, len(found))
	names := map[string]bool{}
	for _, f := range found {
		if len(f.Names) > 0 {
			out = append(out, engine.Listed{Name: f.Names[0], Labels: f.Labels})
			names[f.Names[0]] = true
		}
	}
	vols, err := e.listVolumes(ctx, managedLabel)
	for _, v := range vols {
		if !names[v.Name] {
			out = append(out, v)
		}
	}
	return out, err
}

// isStatus reports whether err is a Podman API error with this HTTP status.
func isStatus(err error, status int) bool {
	var model *errorhandling.ErrorModel
	return errors.As(err, &model) && model.ResponseCode == status
}

// goneCauses are the causes Podman gives for a container or volume that
// was there when the request found its name and is not any more: a removal
// ran meanwhile. Podman 4.3 answers those with 500, not 404.
var goneCauses = []string{
	define.ErrNoSuchCtr.Error(), define.ErrCtrRemoved.Error(),
	define.ErrNoSuchVolume.Error(), define.ErrVolumeRemoved.Error(),
}

// isGone reports whether err says the container or volume asked about
// does not exist (any more).
func isGone(err error) bool {
	var model *errorhandling.ErrorModel
	return errors.As(err, &model) && (model.ResponseCode == http.StatusNotFound || slices.Contains(goneCauses, model.Because))
}

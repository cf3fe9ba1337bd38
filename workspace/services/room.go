package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/jobs"
)

// readyPoll is how often a readiness check is tried.
const readyPoll = 250 * time.Millisecond

// failureLines is how many of a failed service's last log lines its error
// carries.
const failureLines = 20

// Errors a Room's calls wrap.
var (
	// ErrClosed refuses a call after the workspace ended.
	ErrClosed = errors.New("the workspace has ended: its services are gone")
	// ErrUnknown names a service the workspace does not have.
	ErrUnknown = errors.New("no such service")
	// ErrGone is wrapped by a Container's errors once its container
	// stopped or went: a service is never made again behind its back.
	ErrGone = errors.New("the service's container is gone (it stopped or was removed); stop the service and start it again")
)

// Container is a service's own container, made by Deps.Make.
type Container interface {
	// StartJob, JobStatus and JobOutput run and follow the service's
	// command as a background job of the container's agent.
	StartJob(ctx context.Context, req jobs.Request) (wire.JobStartResult, error)
	JobStatus(ctx context.Context, id string) (wire.JobInfo, error)
	JobOutput(ctx context.Context, req wire.JobOutputArgs) (wire.JobOutputResult, error)
	// Run runs a readiness command and returns its exit code and the
	// start of its output.
	Run(ctx context.Context, argv []string, timeout time.Duration) (int, string, error)
	// Tunnel returns the container's tunnel, whose streams reach its ports.
	Tunnel(ctx context.Context) (*yamux.Session, error)
	// Name is the container's name, as the engine lists it.
	Name() string
	// End removes the container and its files, and gives back what it
	// counted in the quotas.
	End(ctx context.Context)
}

// Deps is what a Room needs of its workspace.
type Deps struct {
	// Make makes (and starts) the container of the service spec: its
	// Name, Profile and User.
	Make func(ctx context.Context, spec Spec) (Container, error)
	// Call sends one request to the workspace's agent, starting its
	// container if needed (the port forwards).
	Call func(ctx context.Context, op string, args, result any) error
	// Declared returns the services the workspace's profile declares,
	// which Start starts by name alone and Attach starts when marked.
	Declared func() []Declared
	// ProfileOf names the profile a compose file's image means: a
	// profile's name or its image (ComposeUp).
	ProfileOf func(image string) (string, error)
	// Root is the workspace's folder, where ComposeUp looks.
	Root string
	// Log receives the services' events; Session is what logs call the
	// workspace.
	Log     *slog.Logger
	Session func() string
}

// Room is one workspace's services. It is safe for concurrent use.
type Room struct {
	d      Deps
	mu     sync.Mutex
	byName map[string]*service // nil while one starts
	closed bool
	conns  chan struct{} // a place for each open connection to a service
	// failed says why a declared service did not start (with the
	// workspace, or as a dependency of one started by name).
	failed map[string]string
	// attached says the workspace's current container listens on the
	// running services' ports; attaching is closed when an Attach in
	// progress ends; gen counts Detach; autostarted says the declared
	// services were started once.
	attached    bool
	attaching   chan struct{}
	gen         int
	autostarted bool
}

// service is one running service.
type service struct {
	spec    Spec
	c       Container
	job     string
	started time.Time
	ready   time.Duration
}

// Info describes a running service.
type Info struct {
	Name    string
	Profile string
	// User is the image's user it runs as; "" for the workspace's.
	User      string
	Ports     []int
	Container string
	Job       string
	Started   time.Time
	// ReadyIn is how long the service took to pass its readiness check.
	ReadyIn time.Duration
	// Running says its command still runs; Exit is its code when not.
	Running bool
	Exit    *int
	// Declared marks a service the profile declares that does not run;
	// Autostart, one that starts with the workspace.
	Declared  bool
	Autostart bool
	// Problem says why its state could not be read (its container went).
	Problem string
}

// New returns a workspace's services, none running.
func New(d Deps) *Room {
	return &Room{d: d, byName: map[string]*service{}, conns: make(chan struct{}, MaxConns), failed: map[string]string{}}
}

// Start makes the service's container, runs its command and waits for its
// readiness check, then listens on its ports in the workspace. A service
// that does not become ready in time, or whose command ends, is removed
// and reported with its last log lines. A name alone starts the declared
// service, after those it depends on that do not run.
func (r *Room) Start(ctx context.Context, spec Spec) (Info, error) {
	if !spec.NameOnly() {
		return r.startSpec(ctx, spec)
	}
	chain, err := r.declared(spec.Name)
	if err != nil {
		return Info{}, err
	}
	for _, dep := range chain[:len(chain)-1] {
		if err := r.startDeclared(ctx, dep); err != nil {
			return Info{}, fmt.Errorf("service %s depends on %s, which did not start: %w", spec.Name, dep.Name, err)
		}
	}
	info, err := r.startSpec(ctx, chain[len(chain)-1].Spec)
	r.mu.Lock()
	if err == nil {
		delete(r.failed, spec.Name)
	}
	r.mu.Unlock()
	return info, err
}

// startSpec starts the service spec describes in full.
func (r *Room) startSpec(ctx context.Context, spec Spec) (Info, error) {
	if err := spec.Check(); err != nil {
		return Info{}, err
	}
	if err := r.reserve(spec); err != nil {
		return Info{}, err
	}
	svc, err := r.start(ctx, spec)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || r.closed {
		delete(r.byName, spec.Name)
		if err == nil { // the workspace ended meanwhile
			go svc.c.End(context.WithoutCancel(ctx))
			err = ErrClosed
		}
		return Info{}, err
	}
	r.byName[spec.Name] = svc
	return svc.info(), nil
}

// declared returns the service the profile declares by name, after
// those it depends on, in start order.
func (r *Room) declared(name string) ([]Declared, error) {
	var names []string
	all := r.declaredSpecs()
	for _, d := range all {
		if d.Name == name {
			ordered, err := Order(all)
			if err != nil {
				return nil, err
			}
			chain := needed(ordered, name)
			for i := range chain {
				chain[i].Command, chain[i].Ports, chain[i].Egress = slices.Clone(chain[i].Command), slices.Clone(chain[i].Ports), slices.Clone(chain[i].Egress)
			}
			return chain, nil
		}
		names = append(names, d.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("name: the workspace's profile declares no service %q (it declares none): give profile, command, ports "+
			"and ready_port or ready_command to start one", name)
	}
	return nil, fmt.Errorf("name: the workspace's profile declares no service %q (it declares %s): give profile, command, ports "+
		"and ready_port or ready_command to start one", name, strings.Join(names, ", "))
}

func (r *Room) declaredSpecs() []Declared {
	if r.d.Declared == nil {
		return nil
	}
	return r.d.Declared()
}

// reserve takes spec's name and ports, within MaxServices.
func (r *Room) reserve(spec Spec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if _, taken := r.byName[spec.Name]; taken {
		return fmt.Errorf("name: the workspace already has a service %q; stop it first or choose another name", spec.Name)
	}
	if len(r.byName) >= MaxServices {
		return fmt.Errorf("the workspace has %d services, the most it may have; stop one first", MaxServices)
	}
	for name, other := range r.byName {
		if other == nil {
			continue
		}
		for _, p := range spec.Ports {
			if slices.Contains(other.spec.Ports, p) {
				return fmt.Errorf("ports: %d is already service %s's port in the workspace", p, name)
			}
		}
	}
	r.byName[spec.Name] = nil
	return nil
}

// start does Start's work once the name is reserved.
func (r *Room) start(ctx context.Context, spec Spec) (*service, error) {
	begin := time.Now()
	c, err := r.d.Make(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("making service %s's container: %w", spec.Name, err)
	}
	svc := &service{spec: spec, c: c, started: begin}
	fail := func(err error) (*service, error) {
		c.End(context.WithoutCancel(ctx))
		r.d.Log.Info("service failed", "event", "service_failed", "session", r.d.Session(), "service", spec.Name, "err", err)
		return nil, err
	}
	job, err := c.StartJob(ctx, jobs.Request{Argv: spec.Command, Env: spec.Env})
	if err != nil {
		return fail(fmt.Errorf("starting service %s's command: %w", spec.Name, err))
	}
	svc.job = job.Job.ID
	if err := r.awaitReady(ctx, svc); err != nil {
		return fail(fmt.Errorf("%w; its last log lines:\n%s", err, svc.tail(context.WithoutCancel(ctx), failureLines)))
	}
	svc.ready = time.Since(begin)
	for _, p := range spec.Ports {
		var res wire.ServiceForwardResult
		if err := r.d.Call(ctx, wire.OpServiceForward, wire.ServiceForwardArgs{Port: p, Service: spec.Name, ServicePort: p}, &res); err != nil {
			r.unforward(context.WithoutCancel(ctx), spec.Ports)
			return fail(fmt.Errorf("listening on the workspace's port %d for service %s: %w", p, spec.Name, err))
		}
	}
	r.d.Log.Info("service ready", "event", "service_ready", "session", r.d.Session(), "service", spec.Name,
		"profile", spec.Profile, "container", c.Name(), "ports", spec.Ports, "ready_ms", svc.ready.Milliseconds())
	return svc, nil
}

// awaitReady tries the service's readiness check until it passes, its
// command ends, or the timeout passes.
func (r *Room) awaitReady(ctx context.Context, svc *service) error {
	ready := svc.spec.Ready
	ctx, cancel := context.WithTimeout(ctx, ready.Timeout)
	defer cancel()
	last := ""
	for {
		st, err := svc.c.JobStatus(ctx, svc.job)
		if err == nil && st.State != wire.JobRunning {
			return fmt.Errorf("service %s's command ended (%s) before it was ready", svc.spec.Name, describeEnd(st))
		}
		if errors.Is(err, ErrGone) {
			return fmt.Errorf("service %s: %w", svc.spec.Name, err)
		}
		if ready.Port != 0 {
			if conn, err := dialPort(ctx, svc.c, ready.Port); err == nil {
				conn.Close()
				return nil
			}
		} else {
			code, out, err := svc.c.Run(ctx, ready.Command, ready.Timeout)
			switch {
			case err == nil && code == 0:
				return nil
			case err == nil:
				last = fmt.Sprintf("; its last try exited %d: %q", code, out)
			case ctx.Err() == nil:
				last = "; its last try failed: " + err.Error()
			}
		}
		select {
		case <-ctx.Done():
			what := fmt.Sprintf("port %d accepting a connection", ready.Port)
			if ready.Port == 0 {
				what = fmt.Sprintf("%q exiting 0", strings.Join(ready.Command, " "))
			}
			return fmt.Errorf("service %s was not ready (%s) within %s%s", svc.spec.Name, what, ready.Timeout, last)
		case <-time.After(readyPoll):
		}
	}
}

func (s *service) info() Info {
	return Info{Name: s.spec.Name, Profile: s.spec.Profile, User: s.spec.User, Ports: s.spec.Ports, Container: s.c.Name(), Job: s.job,
		Started: s.started, ReadyIn: s.ready, Running: true}
}

// unforward stops the workspace's listeners of ports, as far as it can.
func (r *Room) unforward(ctx context.Context, ports []int) {
	for _, p := range ports {
		var res wire.ServiceForwardResult
		if err := r.d.Call(ctx, wire.OpServiceUnforward, wire.ServiceForwardArgs{Port: p}, &res); err != nil {
			r.d.Log.Debug("stopping a service port's listener", "session", r.d.Session(), "port", p, "err", err)
		}
	}
}

// Stop stops a service and removes its container and files.
func (r *Room) Stop(ctx context.Context, name string) (Info, error) {
	r.mu.Lock()
	svc := r.byName[name]
	if svc != nil {
		delete(r.byName, name)
	}
	r.mu.Unlock()
	if svc == nil {
		return Info{}, r.unknown(name)
	}
	info := svc.info()
	info.Running = false
	r.unforward(ctx, svc.spec.Ports)
	svc.c.End(ctx)
	r.d.Log.Info("service stopped", "event", "service_stopped", "session", r.d.Session(), "service", name)
	return info, nil
}

// List describes the running services, by name, then those the profile
// declares that do not run.
func (r *Room) List(ctx context.Context) []Info {
	r.mu.Lock()
	var all []*service
	for _, svc := range r.byName {
		if svc != nil {
			all = append(all, svc)
		}
	}
	var idle []Info
	for _, d := range r.declaredSpecs() {
		if _, on := r.byName[d.Name]; !on {
			idle = append(idle, Info{Name: d.Name, Profile: d.Profile, Ports: d.Ports, Declared: true, Autostart: d.Autostart, Problem: r.failed[d.Name]})
		}
	}
	r.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].spec.Name < all[j].spec.Name })
	infos := make([]Info, 0, len(all))
	for _, svc := range all {
		info := svc.info()
		switch st, err := svc.c.JobStatus(ctx, svc.job); {
		case err != nil:
			info.Running, info.Problem = false, err.Error()
		case st.State != wire.JobRunning:
			info.Running, info.Exit = false, st.ExitCode
		}
		infos = append(infos, info)
	}
	return append(infos, idle...)
}

// Logs returns a page of a service's log, as a job's output pages.
func (r *Room) Logs(ctx context.Context, name string, page wire.JobOutputArgs) (wire.JobOutputResult, error) {
	svc, err := r.get(name)
	if err != nil {
		return wire.JobOutputResult{}, err
	}
	page.ID = svc.job
	return svc.c.JobOutput(ctx, page)
}

func (r *Room) get(name string) (*service, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if svc := r.byName[name]; svc != nil {
		return svc, nil
	}
	return nil, r.unknownLocked(name)
}

func (r *Room) unknown(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unknownLocked(name)
}

func (r *Room) unknownLocked(name string) error {
	if r.closed {
		return ErrClosed
	}
	var names []string
	for n, svc := range r.byName {
		if svc != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("name: %w %q: the workspace has none (start one with action start)", ErrUnknown, name)
	}
	return fmt.Errorf("name: %w %q: the workspace has %s", ErrUnknown, name, strings.Join(names, ", "))
}

// Close ends every service, for good, and every later Start: the
// workspace ended.
func (r *Room) Close(ctx context.Context) {
	r.mu.Lock()
	r.closed = true
	var all []*service
	for name, svc := range r.byName {
		if svc != nil {
			all = append(all, svc)
			delete(r.byName, name)
		}
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, svc := range all {
		wg.Go(func() { svc.c.End(ctx) })
	}
	wg.Wait()
	if len(all) > 0 {
		r.d.Log.Info("services ended with their workspace", "event", "services_ended", "session", r.d.Session(), "count", len(all))
	}
}

package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/version"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wink-mcp/wink-mcp/engine"
)

// ServiceRemedy says how to get a Kubernetes API server to answer; the
// error of an unreachable one ends with it.
const ServiceRemedy = "Point --kubeconfig (WINK_KUBECONFIG) at the cluster's kubeconfig, or run wink-mcp in the cluster with a service account; " +
	"`kubectl get --raw /readyz` tells whether the API server answers"

// ErrNotAvailable is wrapped by the error of every Engine method that has
// no Kubernetes meaning yet.
var ErrNotAvailable = errors.New("not available with --engine kubernetes yet")

// The engine-neutral errors in this engine's words.
var (
	errUnreachable = engine.Worded(engine.ErrUnreachable, "cannot reach the Kubernetes API server")
	errSlow        = engine.Worded(engine.ErrSlow, "the Kubernetes API server did not answer")
)

// Options say which cluster an Engine drives, and how.
type Options struct {
	// Kubeconfig is the kubeconfig file; "" uses the in-cluster config,
	// else $KUBECONFIG, else ~/.kube/config.
	Kubeconfig string
	// Namespace holds the workspace Pods.
	Namespace string
	// AgentImage holds only the static wink-mcp at /wink-mcp; an init
	// container of each Pod copies it for the workspace container.
	AgentImage string
	// RuntimeClass is the Pods' runtimeClassName; "" for the cluster's default.
	RuntimeClass string
	// Claims puts each workspace's /workspace on a PersistentVolumeClaim
	// named Spec.WorkspaceVolume (claim.go) rather than an emptyDir.
	Claims bool
	// StorageClass is the claims' storageClassName; "" for the cluster's
	// default StorageClass.
	StorageClass string
	// ManagedLabel is the label (set to "true") every workspace Pod carries:
	// the deny-all NetworkPolicy selects the Pods with it.
	ManagedLabel string
	// InstanceLabel is the label whose value is the ID of the server
	// instance that owns a Pod; the probe Pods and Leases carry it too.
	InstanceLabel string
	// AllowUnenforcedNetworkPolicy lets workspaces be made where the
	// cluster does not enforce the deny-all NetworkPolicy (AllowFlag).
	AllowUnenforcedNetworkPolicy bool
	// APITimeout bounds each API call, StartTimeout a Pod's way to Running
	// (which includes pulling its image).
	APITimeout, StartTimeout time.Duration
}

// Engine makes workspaces as Pods of one namespace. It connects on first
// use and is safe for concurrent use. Lock order: prepMu, then mu.
type Engine struct {
	opts Options
	log  *slog.Logger
	keptWorkspaces

	// prepMu serialises NetworkPolicy; network is its kept answer.
	prepMu  sync.Mutex
	network *engine.NetworkPolicy

	// leases judges other instances' Leases.
	leases leaseClock

	mu     sync.Mutex
	client k8s.Interface
	config *rest.Config // nil for a client made without one (tests): no exec
	// instance is the server instance whose Lease the engine holds
	// (HoldInstance); "" before it holds one.
	instance string
}

// New returns an Engine for the cluster opts name; it connects on first use.
func New(opts Options, log *slog.Logger) *Engine {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	e := &Engine{opts: opts, log: log}
	e.keptWorkspaces = keptWorkspaces{e: e}
	return e
}

// Service returns the kubeconfig the engine was given; a cluster is never
// on this host's files, its kubelets bound a Pod's files (podFor), each
// workspace is a Pod, and its /workspace an emptyDir that goes with it
// unless Options.Claims puts it on a claim that outlives it (a kept
// workspace's always is: Spec.KeptWorkspace).
func (e *Engine) Service() engine.Service {
	return engine.Service{Address: e.opts.Kubeconfig, Remote: true, BoundsDisk: true, Pods: true, FilesGoWithContainer: !e.opts.Claims}
}

// ServiceFix returns ServiceRemedy.
func (e *Engine) ServiceFix() string { return ServiceRemedy }

// connect returns the client, loading the configuration first if needed.
func (e *Engine) connect() (k8s.Interface, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil {
		return e.client, nil
	}
	cfg, err := restConfig(e.opts.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w: loading the kubeconfig: %v. %s", errUnreachable, err, ServiceRemedy)
	}
	// Every call of a session is one API call or more: client-go's default
	// of 5 a second would queue a burst of sessions behind each other.
	cfg.QPS, cfg.Burst = 100, 200
	client, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v. %s", errUnreachable, err, ServiceRemedy)
	}
	e.client, e.config = client, cfg
	return client, nil
}

// restConfig loads the kubeconfig file, or without one the in-cluster
// configuration, else the one of $KUBECONFIG or ~/.kube/config.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// call returns the client and a context for one API call, bounded by the
// API deadline, and the function that ends it: it releases the context
// and, when the deadline (not ctx) cut the call short, rewrites *err to say
// the API server did not answer in time.
func (e *Engine) call(ctx context.Context) (k8s.Interface, context.Context, func(*error), error) {
	client, err := e.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	c, cancel := context.WithTimeout(ctx, e.opts.APITimeout)
	return client, c, func(err *error) {
		if *err != nil && ctx.Err() == nil && errors.Is(c.Err(), context.DeadlineExceeded) {
			*err = fmt.Errorf("%w within %s (%v). `wink-mcp doctor` checks it; if it is only slow, raise --podman-timeout",
				errSlow, e.opts.APITimeout, *err)
		}
		cancel()
	}, nil
}

// Describe asks the API server for its version.
func (e *Engine) Describe(ctx context.Context) (_ engine.Description, err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return engine.Description{}, err
	}
	defer end(&err)
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(c)
	if err != nil {
		return engine.Description{}, fmt.Errorf("%w: %v. %s", errUnreachable, err, ServiceRemedy)
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return engine.Description{}, fmt.Errorf("reading the API server's version: %w", err)
	}
	d := engine.Description{Version: v.GitVersion, APIVersion: "v1", DefaultRuntime: e.opts.RuntimeClass, CgroupsVersion: "v2", Remote: true}
	e.mu.Lock()
	if e.config != nil {
		d.URI = e.config.Host
	}
	e.mu.Unlock()
	return d, nil
}

// Host returns the facts of a cluster's nodes as specs see them: the
// kubelet enforces every limit, nothing is rootless, no overlay mounts.
func (e *Engine) Host(ctx context.Context) (engine.HostFacts, bool, error) {
	h, err := e.SettledHost(ctx)
	return h, true, err
}

// SettledHost returns the same facts as Host. It is the engine's
// preparation: it ensures the deny-all NetworkPolicy and probes whether the
// cluster enforces it (NetworkPolicy), and fails when it does not and
// AllowUnenforcedNetworkPolicy is false.
func (e *Engine) SettledHost(ctx context.Context) (engine.HostFacts, error) {
	n, err := e.NetworkPolicy(ctx)
	if err != nil {
		return engine.HostFacts{}, err
	}
	if err := verdict(n); err != nil {
		return engine.HostFacts{}, err
	}
	return engine.HostFacts{Cgroups: "v2", Arch: runtime.GOARCH}, nil
}

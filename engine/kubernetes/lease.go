package kubernetes

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// The engine holds each server instance's liveness as a Lease of its namespace.
var _ engine.InstanceLiveness = (*Engine)(nil)

// An instance's Lease. A server renews it every LeaseRenewEvery; one not
// renewed for LeaseDuration is expired and its instance dead. Three
// renewals fit in a duration, so a server survives two failed ones (an API
// server's restart, a slow etcd) without being taken for dead, and a
// dead server's Pods go within about LeaseDuration plus a sweep period.
// Idle, a server renews 0.2 times a second.
const (
	// LeaseDuration is how long an instance's Lease holds unrenewed.
	LeaseDuration = 15 * time.Second
	// LeaseRenewEvery is how often a server renews its Lease.
	LeaseRenewEvery = 5 * time.Second
	// leasePrefix begins the name of every instance's Lease.
	leasePrefix = "wink-mcp-instance-"
	// leaseLabel marks the instances' Leases, so that a sweep lists them.
	leaseLabel = "io.wink-mcp.instance-lease"
)

// leaseName is the name of an instance's Lease.
func leaseName(instance string) string { return leasePrefix + instance }

// leaseFor is the Lease of an instance, renewed now.
func leaseFor(instance string, opts Options, now time.Time) *coordinationv1.Lease {
	host, _ := os.Hostname()
	labels := map[string]string{leaseLabel: "true"}
	if opts.InstanceLabel != "" {
		labels[opts.InstanceLabel] = instance
	}
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: leaseName(instance), Namespace: opts.Namespace, Labels: labels},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(instance + "@" + host),
			LeaseDurationSeconds: ptr.To(int32(LeaseDuration / time.Second)),
			AcquireTime:          ptr.To(metav1.NewMicroTime(now)),
			RenewTime:            ptr.To(metav1.NewMicroTime(now)),
		},
	}
}

// HoldInstance creates the instance's Lease, labels the engine's probe
// Pods with the instance from now on (so that a probe Pod left by this
// server is swept as its workspace Pods are), and renews the Lease every
// LeaseRenewEvery until Release.
func (e *Engine) HoldInstance(ctx context.Context, instance string) (_ engine.InstanceHold, err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	begin := time.Now()
	lease, err := client.CoordinationV1().Leases(e.opts.Namespace).Create(c, leaseFor(instance, e.opts, begin), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating Lease %s, which tells other servers this one is alive: %w", leaseName(instance), err)
	}
	e.mu.Lock()
	e.instance = instance
	e.mu.Unlock()
	loopCtx, stop := context.WithCancel(context.Background())
	h := &leaseHold{e: e, client: client, instance: instance, lease: lease, renewed: begin, stop: stop, done: make(chan struct{})}
	go h.renewLoop(loopCtx)
	e.log.Info("instance Lease held", "lease", lease.Name, "duration", LeaseDuration.String(), "renew_every", LeaseRenewEvery.String())
	return h, nil
}

// leaseHold renews an instance's Lease.
type leaseHold struct {
	e        *Engine
	client   k8s.Interface
	instance string
	stop     context.CancelFunc
	done     chan struct{}

	mu      sync.Mutex
	lease   *coordinationv1.Lease // as last written
	renewed time.Time             // when the last successful renewal was sent
	failing bool                  // a renewal failed since the last success
}

// Held returns nil while the Lease was renewed within LeaseDuration.
func (h *leaseHold) Held() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if since := time.Since(h.renewed); since >= LeaseDuration {
		return fmt.Errorf("%w: Lease %s/%s was last renewed %s ago, longer than its %s, so other servers may delete this server's Pods; "+
			"it refuses new workspaces until the Lease is renewed (the log says why renewing fails)",
			engine.ErrNotHeld, h.e.opts.Namespace, leaseName(h.instance), since.Round(time.Second), LeaseDuration)
	}
	return nil
}

// renewLoop renews the Lease every LeaseRenewEvery until ctx ends; a
// failure is logged and the next tick tries again.
func (h *leaseHold) renewLoop(ctx context.Context) {
	defer close(h.done)
	tick := time.NewTicker(LeaseRenewEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		h.renew(ctx)
	}
}

// renew writes a new renewTime, making the Lease again when a sweep
// deleted it as expired.
func (h *leaseHold) renew(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, min(h.e.opts.APITimeout, LeaseRenewEvery))
	defer cancel()
	now := time.Now()
	leases := h.client.CoordinationV1().Leases(h.e.opts.Namespace)
	h.mu.Lock()
	next := h.lease.DeepCopy()
	h.mu.Unlock()
	next.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now))
	got, err := leases.Update(c, next, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		var cur *coordinationv1.Lease
		if cur, err = leases.Get(c, next.Name, metav1.GetOptions{}); err == nil {
			cur.Spec = next.Spec
			got, err = leases.Update(c, cur, metav1.UpdateOptions{})
		}
	}
	if apierrors.IsNotFound(err) {
		h.e.log.Error("this server's Lease was deleted, as expired, by another server, which may have deleted this server's Pods; making it again",
			"lease", next.Name)
		got, err = leases.Create(c, leaseFor(h.instance, h.e.opts, now), metav1.CreateOptions{})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			h.e.log.Warn("renewing this server's Lease failed; trying again", "lease", next.Name, "err", err,
				"last_renewed_ago", time.Since(h.renewed).Round(time.Millisecond).String(), "expires_after", LeaseDuration.String())
		}
		h.failing = true
		return
	}
	if h.failing {
		h.e.log.Info("this server's Lease is renewed again", "lease", next.Name)
		h.failing = false
	}
	h.lease, h.renewed = got, now
}

// Release stops the renewals and deletes the Lease.
func (h *leaseHold) Release(ctx context.Context) error {
	h.stop()
	<-h.done
	h.e.mu.Lock()
	if h.e.instance == h.instance {
		h.e.instance = ""
	}
	h.e.mu.Unlock()
	c, cancel := context.WithTimeout(ctx, h.e.opts.APITimeout)
	defer cancel()
	err := h.client.CoordinationV1().Leases(h.e.opts.Namespace).Delete(c, leaseName(h.instance), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Lease %s: %w", leaseName(h.instance), err)
	}
	return nil
}

// InstanceAlive reads the instance's Lease: a missing one means a dead
// instance (a server makes its Lease before any Pod), and so does one
// expired (leaseExpired).
func (e *Engine) InstanceAlive(ctx context.Context, instance string) (_ bool, err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return false, err
	}
	defer end(&err)
	lease, err := client.CoordinationV1().Leases(e.opts.Namespace).Get(c, leaseName(instance), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Lease %s: %w", leaseName(instance), err)
	}
	return !e.leases.expired(lease, time.Now()), nil
}

// ForgetDeadInstances deletes the expired instance Leases, and those of
// the instances known dead, then the Leases of roaming workspaces idle
// past their idle timeout (forgetIdleRoaming). Each delete of an expired
// one is conditional on the version read, so a Lease renewed in the
// meantime stays.
func (e *Engine) ForgetDeadInstances(ctx context.Context, known []string) (_ []string, err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	leases := client.CoordinationV1().Leases(e.opts.Namespace)
	list, err := leases.List(c, metav1.ListOptions{LabelSelector: leaseLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing instance Leases: %w", err)
	}
	now := time.Now()
	e.leases.forgetAllBut(list.Items)
	var dead []string
	for _, l := range list.Items {
		id := strings.TrimPrefix(l.Name, leasePrefix)
		if !strings.HasPrefix(l.Name, leasePrefix) || (!slices.Contains(known, id) && !e.leases.expired(&l, now)) {
			continue
		}
		err := leases.Delete(c, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To(l.ResourceVersion)}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return dead, fmt.Errorf("deleting expired Lease %s: %w", l.Name, err)
		}
		dead = append(dead, id)
	}
	return dead, forgetIdleRoaming(c, e, client, now)
}

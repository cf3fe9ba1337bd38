package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// The Lease of a kept workspace says who owns it: its holder renews it
// every keptRenewEvery while a session has it open, and deletes it when
// the session ends. A holder that stops renewing (a server killed, a node
// cut off) loses it keptLeaseFor after its last renewal.
const (
	keptLeaseFor   = 15 * time.Second
	keptRenewEvery = 5 * time.Second
)

// keptLease is a Lease this server holds, renewed in the background.
type keptLease struct {
	e      *Engine
	client k8s.Interface
	name   string
	holder string

	once    sync.Once
	cancel  context.CancelFunc
	stopped chan struct{}
}

// liveHolder returns the holder of the Lease and when it ends, or "" when
// it has none or it has expired at now.
func liveHolder(l *coordinationv1.Lease, now time.Time) (string, time.Time) {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return "", time.Time{}
	}
	until := s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)
	if !now.Before(until) {
		return "", time.Time{}
	}
	return *s.HolderIdentity, until
}

// takeLease takes the Lease name for ask.Holder: it makes it when
// missing, takes it over when its holder's term has ended, and otherwise
// refuses, naming the holder. A holder that has missed its renewals (a
// killed server) is waited for until its term ends, within ctx.
func (k keptWorkspaces) takeLease(ctx context.Context, client k8s.Interface, name string, ask engine.KeptAsk) (*keptLease, error) {
	e := k.e
	leases := client.CoordinationV1().Leases(e.opts.Namespace)
	for {
		c, cancel := context.WithTimeout(ctx, e.opts.APITimeout)
		now := metav1.NowMicro()
		mine := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(ask.Holder), LeaseDurationSeconds: ptr.To(int32(keptLeaseFor / time.Second)),
			AcquireTime: &now, RenewTime: &now}
		got, err := leases.Get(c, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = leases.Create(c, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.opts.Namespace,
				Labels: map[string]string{KeptLabel: "true"}}, Spec: mine}, metav1.CreateOptions{})
		case err == nil:
			holder, until := liveHolder(got, now.Time)
			if holder != "" {
				cancel()
				// Renewed long ago, or known gone: its term ends soon.
				if now.Sub(got.Spec.RenewTime.Time) > 2*keptRenewEvery || ask.Gone != nil && ask.Gone(holder) {
					if d, ok := ctx.Deadline(); !ok || d.After(until) {
						e.log.Info("waiting for the Lease of a kept workspace whose holder stopped renewing it", "workspace", ask.Name, "holder", holder, "until", until)
						if err := sleep(ctx, time.Until(until)); err != nil {
							return nil, err
						}
						continue
					}
				}
				return nil, fmt.Errorf("%w: workspace %q is held by %s until %s unless renewed (Lease %s/%s); end that session (close its client), wait, or choose another workspace name",
					engine.ErrKeptHeld, ask.Name, holder, until.Format(time.RFC3339), e.opts.Namespace, name)
			}
			taken := got.DeepCopy()
			mine.LeaseTransitions = ptr.To(ptr.Deref(got.Spec.LeaseTransitions, 0) + 1)
			taken.Spec = mine
			_, err = leases.Update(c, taken, metav1.UpdateOptions{})
		}
		cancel()
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			continue // another server took it meanwhile: read it again
		}
		if err != nil {
			return nil, fmt.Errorf("taking the Lease %s of kept workspace %q: %w", name, ask.Name, err)
		}
		l := &keptLease{e: e, client: client, name: name, holder: ask.Holder, stopped: make(chan struct{})}
		var renewCtx context.Context
		renewCtx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
		go l.renew(renewCtx)
		return l, nil
	}
}

// sleep waits for d or ctx.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// renew renews the Lease every keptRenewEvery until ctx ends. A Lease
// another holder took (this one stopped renewing for a whole term) is
// left to it, loudly.
func (l *keptLease) renew(ctx context.Context) {
	defer close(l.stopped)
	tick := time.NewTicker(keptRenewEvery)
	defer tick.Stop()
	leases := l.client.CoordinationV1().Leases(l.e.opts.Namespace)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, cancel := context.WithTimeout(ctx, l.e.opts.APITimeout)
		got, err := leases.Get(c, l.name, metav1.GetOptions{})
		if err == nil && ptr.Deref(got.Spec.HolderIdentity, "") != l.holder {
			cancel()
			l.e.log.Error("another server took the Lease of a kept workspace this server holds: two sessions may write its files", "lease", l.name,
				"holder", ptr.Deref(got.Spec.HolderIdentity, ""))
			return
		}
		if err == nil {
			got.Spec.RenewTime = ptr.To(metav1.NowMicro())
			_, err = leases.Update(c, got, metav1.UpdateOptions{})
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			l.e.log.Warn("renewing the Lease of a kept workspace", "lease", l.name, "err", err)
		}
	}
}

// stop stops the renewals and reports whether this call stopped them.
func (l *keptLease) stop() bool {
	first := false
	l.once.Do(func() {
		first = true
		l.cancel()
		<-l.stopped
	})
	return first
}

// release deletes the Lease if this server still holds it.
func (l *keptLease) release(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, l.e.opts.APITimeout)
	defer cancel()
	leases := l.client.CoordinationV1().Leases(l.e.opts.Namespace)
	got, err := leases.Get(c, l.name, metav1.GetOptions{})
	if err == nil && ptr.Deref(got.Spec.HolderIdentity, "") == l.holder {
		err = leases.Delete(c, l.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &got.ResourceVersion}})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		l.e.log.Warn("ending the Lease of a kept workspace; it expires by itself", "lease", l.name, "err", err, "within", keptLeaseFor)
	}
}

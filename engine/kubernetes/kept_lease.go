package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
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

// A server that takes a kept workspace any server may serve in turn
// (engine.KeptAsk.OnWanted: a handle's) while another holds it sets
// wantedAnnotation on its Lease and polls the Lease every wantedPoll; the
// holder reads its Lease every wantedPoll too (a get; the update that
// renews it stays every keptRenewEvery), and lets the workspace go once
// no call of its own runs on it.
const (
	wantedAnnotation = "io.wink-mcp/wanted-by"
	wantedPoll       = time.Second
)

// leaseKind says how takeLease makes a workspace's Lease when missing
// (labels, annotations) and which found one it refuses (check, nil for
// none): a kept workspace's (keptLeaseKind) or a roaming one's
// (roamingLeaseKind).
type leaseKind struct {
	labels, annotations map[string]string
	check               func(*coordinationv1.Lease) error
}

// keptLeaseKind is the Lease of a kept workspace; its claim is its record.
var keptLeaseKind = leaseKind{labels: map[string]string{KeptLabel: "true"}}

// keptLease is a Lease this server holds, renewed in the background.
type keptLease struct {
	e      *Engine
	client k8s.Interface
	name   string
	holder string
	// onWanted is called, once, when another server asks for the workspace.
	onWanted   func()
	wantedOnce sync.Once
	// wanted is set when onWanted is called.
	wanted atomic.Bool

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
func (k keptWorkspaces) takeLease(ctx context.Context, client k8s.Interface, name string, ask engine.KeptAsk, kind leaseKind) (*keptLease, error) {
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
				Labels: kind.labels, Annotations: kind.annotations}, Spec: mine}, metav1.CreateOptions{})
		case err == nil && kind.check != nil && kind.check(got) != nil:
			cancel()
			return nil, kind.check(got)
		case err == nil:
			holder, until := liveHolder(got, now.Time)
			if holder != "" && ask.OnWanted != nil {
				err := k.askToLetGo(c, leases, got, ask)
				cancel()
				if err == nil {
					err = sleep(ctx, wantedPoll)
				}
				switch {
				case err != nil && ctx.Err() == nil:
					return nil, fmt.Errorf("asking the holder of kept workspace %q to let it go (Lease %s): %w", ask.Name, name, err)
				case err != nil:
					return nil, fmt.Errorf("%w: workspace %q is held by %s, which did not let it go in time (a call of its own runs on it; Lease %s/%s); try again, "+
						"or route each handle's calls to one server by the Mcp-Param-Workspace header", engine.ErrKeptHeld, ask.Name, holder, e.opts.Namespace, name)
				}
				continue
			}
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
			delete(taken.Annotations, wantedAnnotation)
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
		l := &keptLease{e: e, client: client, name: name, holder: ask.Holder, onWanted: ask.OnWanted, stopped: make(chan struct{})}
		var renewCtx context.Context
		renewCtx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
		go l.renew(renewCtx)
		return l, nil
	}
}

// askToLetGo marks the Lease got, held by another, as wanted by ask.Holder
// (once: a mark already there is left); a conflict is no error, as the
// caller reads the Lease again.
func (k keptWorkspaces) askToLetGo(ctx context.Context, leases coordinationclient.LeaseInterface, got *coordinationv1.Lease, ask engine.KeptAsk) error {
	if got.Annotations[wantedAnnotation] == ask.Holder {
		return nil
	}
	wanted := got.DeepCopy()
	if wanted.Annotations == nil {
		wanted.Annotations = map[string]string{}
	}
	wanted.Annotations[wantedAnnotation] = ask.Holder
	_, err := leases.Update(ctx, wanted, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		k.e.log.Info("asked the holder of a kept workspace to let it go", "workspace", ask.Name, "holder", ptr.Deref(got.Spec.HolderIdentity, ""))
	}
	return err
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

// renew renews the Lease every keptRenewEvery until ctx ends, reading it
// every wantedPoll to see whether another server wants the workspace. A
// Lease another holder took (this one stopped renewing for a whole term)
// is left to it, loudly.
func (l *keptLease) renew(ctx context.Context) {
	defer close(l.stopped)
	tick := time.NewTicker(wantedPoll)
	defer tick.Stop()
	leases := l.client.CoordinationV1().Leases(l.e.opts.Namespace)
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if l.onWanted == nil && time.Since(renewed) < keptRenewEvery {
			continue
		}
		c, cancel := context.WithTimeout(ctx, l.e.opts.APITimeout)
		got, err := leases.Get(c, l.name, metav1.GetOptions{})
		if err == nil && ptr.Deref(got.Spec.HolderIdentity, "") != l.holder {
			cancel()
			l.e.log.Error("another server took the Lease of a kept workspace this server holds: two sessions may write its files", "lease", l.name,
				"holder", ptr.Deref(got.Spec.HolderIdentity, ""))
			return
		}
		if err == nil && got.Annotations[wantedAnnotation] != "" && l.onWanted != nil {
			// Not on this goroutine: letting go stops these renewals.
			l.wantedOnce.Do(func() {
				l.wanted.Store(true)
				go l.onWanted()
			})
		}
		if err == nil && time.Since(renewed) >= keptRenewEvery {
			got.Spec.RenewTime = ptr.To(metav1.NowMicro())
			if _, err = leases.Update(c, got, metav1.UpdateOptions{}); err == nil {
				renewed = time.Now()
			}
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

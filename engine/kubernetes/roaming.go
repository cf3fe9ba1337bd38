package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// A roaming workspace (engine.KeptAsk.Roaming) is a 2026-07-28 handle's
// own workspace, not kept, that any replica may serve in turn. Its files
// are in its Pod's emptyDir, and the Pod moves from server to server by
// adoption (adopt.go), as a kept workspace's does. Its one object in the
// cluster besides the Pod is a Lease (roamingObjectName), made by the
// server that opens it, which is both "one owner at a time" (the same
// code as a kept workspace's: kept_lease.go) and its record: the
// principal's digest (checked by every taker), the idle timeout, and the
// handle's record (handleAnnotation: digests only). A holder that lets it
// go while the handle's record is on it leaves the Lease with no holder
// for the next server; without the record (the handle was closed or
// expired) it deletes it. A Lease nobody renewed for its idle timeout is
// deleted by whichever server's sweep sees it first (forgetIdleRoaming);
// its Pod goes by the sweep of its dead server's Pods (awaitsAdoption).

// RoamingLabel marks the Leases of roaming workspaces.
const RoamingLabel = "io.wink-mcp.roaming"

// The annotations of a roaming workspace's Lease, besides its handle's record.
const (
	roamingPrincipalAnnotation = "io.wink-mcp/roaming-principal"
	roamingIdleAnnotation      = "io.wink-mcp/roaming-idle"
)

// roamingPrefix begins the name of a roaming workspace's Lease.
const roamingPrefix = "wink-roam-"

// roamingObjectName is the name of the Lease of the roaming workspace name.
func roamingObjectName(name string) string { return roamingPrefix + name }

// roamingLeaseKind is the Lease of the roaming workspace ask names: made
// with its principal and idle timeout, and refused to any other principal.
func roamingLeaseKind(ask engine.KeptAsk) leaseKind {
	return leaseKind{
		labels:      map[string]string{RoamingLabel: "true"},
		annotations: map[string]string{roamingPrincipalAnnotation: ask.Principal, roamingIdleAnnotation: ask.Idle.String()},
		check: func(l *coordinationv1.Lease) error {
			if l.Labels[RoamingLabel] != "true" || l.Annotations[roamingPrincipalAnnotation] != ask.Principal {
				return fmt.Errorf("workspace %q belongs to another client (another bearer token), or its Lease %s was changed by hand", ask.Name, l.Name)
			}
			return nil
		},
	}
}

// holdRoaming takes the roaming workspace ask.Name's Lease for ask.Holder.
func (k keptWorkspaces) holdRoaming(ctx context.Context, ask engine.KeptAsk) (_ *engine.Held, err error) {
	if !engine.IsRoamingName(ask.Name) {
		return nil, fmt.Errorf("roaming workspace %q: not a roaming workspace's name", ask.Name)
	}
	if ask.Idle <= 0 {
		return nil, fmt.Errorf("roaming workspace %q: it needs an idle timeout (--idle-timeout above 0), after which an unused one is removed", ask.Name)
	}
	client, _, end, err := k.e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	lease, err := k.takeLease(ctx, client, roamingObjectName(ask.Name), ask, roamingLeaseKind(ask))
	if err != nil {
		return nil, err
	}
	return &engine.Held{Release: func(ctx context.Context) {
		if lease.stop() {
			lease.leaveForNext(ctx)
		}
	}, Wanted: lease.wanted.Load}, nil
}

// leaveForNext ends this server's hold of a roaming workspace's Lease, if
// it still holds it: while a handle's record is on it, it stays with no
// holder (renewed now: its idle time starts), for the next server;
// otherwise it is deleted. Both carry the version read.
func (l *keptLease) leaveForNext(ctx context.Context) {
	c, cancel := context.WithTimeout(ctx, l.e.opts.APITimeout)
	defer cancel()
	leases := l.client.CoordinationV1().Leases(l.e.opts.Namespace)
	for range 5 {
		got, err := leases.Get(c, l.name, metav1.GetOptions{})
		if err != nil || ptr.Deref(got.Spec.HolderIdentity, "") != l.holder {
			if err != nil && !apierrors.IsNotFound(err) {
				l.e.log.Warn("letting go of a roaming workspace's Lease; it expires by itself", "lease", l.name, "err", err)
			}
			return
		}
		if hasHandleRecord(got) {
			left := got.DeepCopy()
			left.Spec.HolderIdentity, left.Spec.RenewTime = nil, ptr.To(metav1.NowMicro())
			delete(left.Annotations, wantedAnnotation)
			_, err = leases.Update(c, left, metav1.UpdateOptions{})
		} else {
			err = leases.Delete(c, l.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &got.ResourceVersion}})
		}
		if apierrors.IsConflict(err) {
			continue // a record written or removed meanwhile: read it again
		}
		if err != nil && !apierrors.IsNotFound(err) {
			l.e.log.Warn("letting go of a roaming workspace's Lease; it expires by itself", "lease", l.name, "err", err)
		}
		return
	}
}

// hasHandleRecord reports whether the Lease carries a handle's record,
// or a handoff's (roaming_handoffs.go).
func hasHandleRecord(l *coordinationv1.Lease) bool {
	return hasAnnotation(l, handleAnnotationPrefix) || hasAnnotation(l, handoffAnnotationPrefix)
}

// hasAnnotation reports whether the Lease has an annotation beginning with prefix.
func hasAnnotation(l *coordinationv1.Lease, prefix string) bool {
	for key := range l.Annotations {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// findRoamingHandle looks for the record of digest on the roaming
// workspaces' Leases.
func findRoamingHandle(ctx context.Context, client k8s.Interface, namespace, digest string) (engine.HandleRecord, error) {
	leases, err := client.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{LabelSelector: RoamingLabel + "=true"})
	if err != nil {
		return engine.HandleRecord{}, fmt.Errorf("listing the roaming workspaces' Leases for a workspace handle: %w", err)
	}
	key := handleAnnotation(digest)
	for _, l := range leases.Items {
		if value, ok := l.Annotations[key]; ok {
			return handleFromLease(&l, value, digest)
		}
	}
	return engine.HandleRecord{}, engine.ErrNoHandleRecord
}

// handleFromLease decodes and checks a handle's annotation on a roaming
// workspace's Lease: its record must be well formed, roaming, and name
// the digest asked for, the Lease's own workspace and the Lease's
// principal. A record copied onto another principal's Lease names that
// Lease's workspace only if edited, and then not its own principal.
func handleFromLease(l *coordinationv1.Lease, value, digest string) (engine.HandleRecord, error) {
	var rec engine.HandleRecord
	if err := json.Unmarshal([]byte(value), &rec); err != nil {
		return engine.HandleRecord{}, fmt.Errorf("the workspace handle record on Lease %s is not JSON (%v); remove the annotation %s", l.Name, err, handleAnnotation(digest))
	}
	if err := rec.Check(); err != nil || rec.Digest != digest || !rec.Roaming || roamingObjectName(rec.Workspace) != l.Name ||
		rec.Principal != l.Annotations[roamingPrincipalAnnotation] {
		return engine.HandleRecord{}, fmt.Errorf("the workspace handle record on Lease %s is not well formed; remove the annotation %s", l.Name, handleAnnotation(digest))
	}
	return rec, nil
}

// RoamingNames lists the roaming workspaces whose Lease exists (engine.RoamingHandoffs).
func (k keptWorkspaces) RoamingNames(ctx context.Context) (_ []string, err error) {
	client, c, end, err := k.e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	list, err := client.CoordinationV1().Leases(k.e.opts.Namespace).List(c, metav1.ListOptions{LabelSelector: RoamingLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the roaming workspaces' Leases: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, l := range list.Items {
		names = append(names, strings.TrimPrefix(l.Name, roamingPrefix))
	}
	return names, nil
}

// forgetIdleRoaming deletes the Leases of roaming workspaces that nobody
// holds (or whose holder stopped renewing) and that were last renewed
// longer ago than their idle timeout: their handles have expired, and
// their Pods, left by dead servers, are swept as awaiting no adoption.
// Each delete carries the version read, so that of two servers sweeping
// at once one deletes it, and a Lease taken meanwhile stays.
func forgetIdleRoaming(ctx context.Context, e *Engine, client k8s.Interface, now time.Time) error {
	leases := client.CoordinationV1().Leases(e.opts.Namespace)
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: RoamingLabel + "=true"})
	if err != nil {
		return fmt.Errorf("listing the roaming workspaces' Leases: %w", err)
	}
	for _, l := range list.Items {
		if !roamingIdle(&l, now) {
			continue
		}
		err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To(l.ResourceVersion)}})
		switch {
		case err == nil:
			e.log.Info("removed the Lease of a roaming workspace idle past its idle timeout", "lease", l.Name)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			return fmt.Errorf("deleting the Lease %s of an idle roaming workspace: %w", l.Name, err)
		}
	}
	return nil
}

// roamingIdle reports whether the roaming workspace's Lease l has no
// live holder nor handoff waiting, and either no handle's record or was
// last renewed its idle timeout or longer before now.
// A Lease whose idle timeout cannot be read is judged by a day.
func roamingIdle(l *coordinationv1.Lease, now time.Time) bool {
	if holder, _ := liveHolder(l, now); holder != "" || l.Spec.RenewTime == nil || liveHandoff(l, now) {
		return false
	}
	if !hasAnnotation(l, handleAnnotationPrefix) {
		return true // no handle names it, and its handoffs expired: nobody can take it
	}
	idle, err := time.ParseDuration(l.Annotations[roamingIdleAnnotation])
	if err != nil || idle <= 0 {
		idle = 24 * time.Hour
	}
	return now.Sub(l.Spec.RenewTime.Time) >= idle
}

package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// A roaming workspace handed over (engine.RoamingHandoffs) waits on its
// Lease, its Pod left running by its last holder: the handoff's record
// (its handle's digest, principal, profile and expiry) is an annotation
// of the Lease, which keeps the Lease (and, through AwaitsAdoption, the
// Pod) while it has not expired. The server that takes it, on any
// replica, replaces that annotation with its new handle's record in one
// update carrying the resourceVersion it read: of two takers racing, the
// second's update conflicts, and reading again it finds the handoff gone.
// (Updates, not patches: the Role's verbs on Leases are create, get,
// list, update and delete.)

// handoffAnnotationPrefix begins the annotation of a handoff's record.
const handoffAnnotationPrefix = "handoffs.wink-mcp.io/"

func handoffAnnotation(digest string) string {
	return handoffAnnotationPrefix + digest[:handleKeyHexDigits]
}

// takeHandoffTries bounds how often a taker reads the Lease again after
// a conflict (another record written, a renewal) before giving up.
const takeHandoffTries = 8

// PutHandoff records rec on the Lease of the roaming workspace name.
func (k keptWorkspaces) PutHandoff(ctx context.Context, name string, rec engine.HandoffRecord) (err error) {
	if !engine.IsRoamingName(name) || !engine.IsHandleDigest(rec.Digest) || rec.Expires.IsZero() {
		return fmt.Errorf("recording a handoff of roaming workspace %q: not a roaming workspace, a digest or an expiry", name)
	}
	client, c, end, err := k.e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	value, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	leases := client.CoordinationV1().Leases(k.e.opts.Namespace)
	for {
		l, err := leases.Get(c, roamingObjectName(name), metav1.GetOptions{})
		if err == nil {
			setAnnotation(&l.ObjectMeta, handoffAnnotation(rec.Digest), ptr.To(string(value)))
			_, err = leases.Update(c, l, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) {
			continue // renewed meanwhile: read it again
		}
		if err != nil {
			return fmt.Errorf("recording a handoff on the Lease of roaming workspace %q: %w", name, err)
		}
		return nil
	}
}

// TakeHandoff takes the handoff of digest for principal (engine.RoamingHandoffs).
func (k keptWorkspaces) TakeHandoff(ctx context.Context, digest, principal string, handle engine.HandleRecord) (_ engine.HandleRecord, _ engine.HandoffRecord, err error) {
	none := engine.HandoffRecord{}
	if !engine.IsHandleDigest(digest) || !engine.IsHandleDigest(handle.Digest) {
		return engine.HandleRecord{}, none, engine.ErrNoHandleRecord
	}
	client, c, end, err := k.e.call(ctx)
	if err != nil {
		return engine.HandleRecord{}, none, err
	}
	defer end(&err)
	leases := client.CoordinationV1().Leases(k.e.opts.Namespace)
	key := handoffAnnotation(digest)
	for range takeHandoffTries {
		list, err := leases.List(c, metav1.ListOptions{LabelSelector: RoamingLabel + "=true"})
		if err != nil {
			return engine.HandleRecord{}, none, fmt.Errorf("listing the roaming workspaces' Leases for a handoff: %w", err)
		}
		var lease *coordinationv1.Lease
		for i := range list.Items {
			if _, ok := list.Items[i].Annotations[key]; ok {
				lease = &list.Items[i]
			}
		}
		if lease == nil {
			return engine.HandleRecord{}, none, engine.ErrNoHandleRecord
		}
		rec, err := handoffFromLease(lease, digest)
		if err != nil {
			k.e.log.Warn("a handoff record is not served", "err", err)
			return engine.HandleRecord{}, none, engine.ErrNoHandleRecord
		}
		if rec.Principal != principal || !time.Now().Before(rec.Expires) {
			return engine.HandleRecord{}, none, engine.ErrNoHandleRecord
		}
		handle.Workspace, handle.Profile, handle.Roaming = strings.TrimPrefix(lease.Name, roamingPrefix), rec.Profile, true
		if err := handle.Check(); err != nil {
			return engine.HandleRecord{}, none, err
		}
		value, err := json.Marshal(handle)
		if err != nil {
			return engine.HandleRecord{}, none, err
		}
		// The Lease as read, its resourceVersion with it: an update
		// fails if anything changed since.
		taken := lease.DeepCopy()
		if holder, _ := liveHolder(taken, time.Now()); holder == "" {
			// Its idle time starts again: no sweep takes it from the taker
			// before the taker holds it.
			taken.Spec.RenewTime = ptr.To(metav1.NowMicro())
		}
		setAnnotation(&taken.ObjectMeta, key, nil)
		setAnnotation(&taken.ObjectMeta, handleAnnotation(handle.Digest), ptr.To(string(value)))
		_, err = leases.Update(c, taken, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err):
			continue // changed since read: taken by another, or a renewal; read again
		case apierrors.IsNotFound(err):
			return engine.HandleRecord{}, none, engine.ErrNoHandleRecord
		case err != nil:
			return engine.HandleRecord{}, none, fmt.Errorf("taking a handoff from Lease %s: %w", lease.Name, err)
		}
		return handle, rec, nil
	}
	return engine.HandleRecord{}, none, errors.New("taking a handoff: its roaming workspace's Lease kept changing while it was taken; try again")
}

// GiveBackHandoff puts the handoff back in place of the handle's record
// taken replaced (engine.RoamingHandoffs), in one update carrying the
// version read.
func (k keptWorkspaces) GiveBackHandoff(ctx context.Context, taken engine.HandleRecord, handoff engine.HandoffRecord) (err error) {
	if !engine.IsRoamingName(taken.Workspace) || !engine.IsHandleDigest(taken.Digest) || !engine.IsHandleDigest(handoff.Digest) {
		return fmt.Errorf("giving back a handoff of roaming workspace %q: not a roaming workspace or a digest", taken.Workspace)
	}
	value, err := json.Marshal(handoff)
	if err != nil {
		return err
	}
	client, c, end, err := k.e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	leases := client.CoordinationV1().Leases(k.e.opts.Namespace)
	for range takeHandoffTries {
		l, err := leases.Get(c, roamingObjectName(taken.Workspace), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("giving back a handoff on the Lease of roaming workspace %q: %w", taken.Workspace, err)
		}
		if _, ok := l.Annotations[handleAnnotation(taken.Digest)]; !ok {
			return nil
		}
		setAnnotation(&l.ObjectMeta, handleAnnotation(taken.Digest), nil)
		setAnnotation(&l.ObjectMeta, handoffAnnotation(handoff.Digest), ptr.To(string(value)))
		_, err = leases.Update(c, l, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err):
			continue // renewed or let go meanwhile: read it again
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("giving back a handoff on the Lease of roaming workspace %q: %w", taken.Workspace, err)
		}
		return nil
	}
	return fmt.Errorf("giving back a handoff: the Lease of roaming workspace %q kept changing", taken.Workspace)
}

// handoffFromLease decodes and checks a handoff's annotation: its record
// must name the digest asked for and the Lease's principal.
func handoffFromLease(l *coordinationv1.Lease, digest string) (engine.HandoffRecord, error) {
	var rec engine.HandoffRecord
	if err := json.Unmarshal([]byte(l.Annotations[handoffAnnotation(digest)]), &rec); err != nil {
		return rec, fmt.Errorf("the handoff record on Lease %s is not JSON (%v); remove the annotation %s", l.Name, err, handoffAnnotation(digest))
	}
	if rec.Digest != digest || rec.Principal != l.Annotations[roamingPrincipalAnnotation] || rec.Expires.IsZero() {
		return rec, fmt.Errorf("the handoff record on Lease %s is not well formed; remove the annotation %s", l.Name, handoffAnnotation(digest))
	}
	return rec, nil
}

// liveHandoff reports whether the Lease carries a handoff that has not
// expired at now (one whose record cannot be read counts as live until
// the Lease's idle timeout has passed: roamingIdle).
func liveHandoff(l *coordinationv1.Lease, now time.Time) bool {
	for key, value := range l.Annotations {
		if !strings.HasPrefix(key, handoffAnnotationPrefix) {
			continue
		}
		var rec engine.HandoffRecord
		if json.Unmarshal([]byte(value), &rec) != nil || now.Before(rec.Expires) {
			return true
		}
	}
	return false
}

// The Engine keeps roaming workspaces' handoffs in the cluster.
var _ engine.RoamingHandoffs = (*Engine)(nil)

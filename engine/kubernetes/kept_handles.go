package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// The records of the 2026-07-28 workspace handles open on a kept workspace
// (engine.HandleStore) are annotations of its claim, one per handle: the
// claim is already the kept workspace's record, every replica reads it,
// it goes when the workspace is removed, and only digests are stored, so
// nothing there needs a Secret. A handle is found by listing the kept
// claims (one List per lookup, made only by a replica that does not hold
// the handle yet). The annotation's name carries the first
// handleKeyHexDigits of the digest (a name part holds at most 63
// characters); its value, the whole record, is checked against the digest.
const (
	handleAnnotationPrefix = "handles.wink-mcp.io/"
	handleKeyHexDigits     = 60
)

func handleAnnotation(digest string) string {
	return handleAnnotationPrefix + digest[:handleKeyHexDigits]
}

// PutHandle records rec on its kept workspace's claim (a roaming
// workspace's Lease: rec.Roaming).
func (k keptWorkspaces) PutHandle(ctx context.Context, rec engine.HandleRecord) error {
	if err := rec.Check(); err != nil {
		return err
	}
	return k.patchHandle(ctx, rec.Workspace, rec.Roaming, rec.Digest, &rec, false)
}

// TouchHandle sets the Used time of rec's record, which must still be there.
func (k keptWorkspaces) TouchHandle(ctx context.Context, rec engine.HandleRecord) error {
	if err := rec.Check(); err != nil {
		return err
	}
	return k.patchHandle(ctx, rec.Workspace, rec.Roaming, rec.Digest, &rec, true)
}

// DeleteHandle removes the record of digest from workspace's claim, or
// from its Lease when workspace is a roaming workspace's name.
func (k keptWorkspaces) DeleteHandle(ctx context.Context, workspace, digest string) error {
	if !engine.IsHandleDigest(digest) {
		return nil
	}
	err := k.patchHandle(ctx, workspace, engine.IsRoamingName(workspace), digest, nil, false)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// recordHolder is the object a handle's record is an annotation of: the
// claim of a kept workspace, or the Lease of a roaming one.
type recordHolder struct {
	what string
	get  func(ctx context.Context) (metav1.Object, error)
	// write sets (value) or removes (nil) the annotation key of obj, as
	// read by get; on the condition that obj is unchanged when
	// conditional (a Lease's write always is: an update).
	write func(ctx context.Context, obj metav1.Object, key string, value *string, conditional bool) error
}

func recordHolderOf(client k8s.Interface, namespace, workspace string, roaming bool) recordHolder {
	if roaming {
		// An update, not a patch: the Role's verbs on Leases are those
		// of the Leases' owners (create, get, list, update, delete).
		leases, name := client.CoordinationV1().Leases(namespace), roamingObjectName(workspace)
		return recordHolder{what: fmt.Sprintf("the Lease of roaming workspace %q", workspace),
			get: func(ctx context.Context) (metav1.Object, error) { return leases.Get(ctx, name, metav1.GetOptions{}) },
			write: func(ctx context.Context, obj metav1.Object, key string, value *string, _ bool) error {
				l := obj.(*coordinationv1.Lease).DeepCopy()
				setAnnotation(&l.ObjectMeta, key, value)
				_, err := leases.Update(ctx, l, metav1.UpdateOptions{})
				return err
			}}
	}
	claims, name := client.CoreV1().PersistentVolumeClaims(namespace), keptObjectName(workspace)
	return recordHolder{what: fmt.Sprintf("the claim of kept workspace %q", workspace),
		get: func(ctx context.Context) (metav1.Object, error) { return claims.Get(ctx, name, metav1.GetOptions{}) },
		write: func(ctx context.Context, obj metav1.Object, key string, value *string, conditional bool) error {
			meta := map[string]any{"annotations": map[string]any{key: value}} // nil removes it
			if conditional {
				meta["resourceVersion"] = obj.GetResourceVersion()
			}
			patch, err := json.Marshal(map[string]any{"metadata": meta})
			if err != nil {
				return err
			}
			_, err = claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}}
}

// setAnnotation sets (value) or removes (nil) the annotation key.
func setAnnotation(meta *metav1.ObjectMeta, key string, value *string) {
	if value == nil {
		delete(meta.Annotations, key)
		return
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = *value
}

// patchHandle writes (rec) or removes (nil) a handle's annotation on the
// claim of workspace (the Lease of a roaming one). When existing, the
// annotation must be there, and the write carries the object's
// resourceVersion, so that a touch never brings back a record a close
// on another replica removed.
func (k keptWorkspaces) patchHandle(ctx context.Context, workspace string, roaming bool, digest string, rec *engine.HandleRecord, existing bool) (err error) {
	client, c, end, err := k.e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	holder := recordHolderOf(client, k.e.opts.Namespace, workspace, roaming)
	key := handleAnnotation(digest)
	var value *string // nil removes the annotation
	if rec != nil {
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		value = ptr.To(string(b))
	}
	for {
		obj, err := holder.get(c)
		switch {
		case apierrors.IsNotFound(err) && existing:
			return engine.ErrNoHandleRecord
		case apierrors.IsNotFound(err) && rec != nil:
			return fmt.Errorf("recording a workspace handle: %s is gone (removed?)", holder.what)
		case err != nil:
			return fmt.Errorf("reading %s: %w", holder.what, err)
		}
		if _, ok := obj.GetAnnotations()[key]; existing && !ok {
			return engine.ErrNoHandleRecord
		}
		err = holder.write(c, obj, key, value, existing)
		switch {
		case apierrors.IsConflict(err):
			continue // the object changed (another handle's record, a renewal): read it again
		case apierrors.IsNotFound(err) && rec != nil:
			return fmt.Errorf("recording a workspace handle: %s is gone (removed?)", holder.what)
		case err != nil:
			return fmt.Errorf("recording a workspace handle on %s: %w", holder.what, err)
		}
		return nil
	}
}

// FindHandle looks for the record of digest on the kept workspaces'
// claims, then on the roaming workspaces' Leases.
func (k keptWorkspaces) FindHandle(ctx context.Context, digest string) (_ engine.HandleRecord, err error) {
	if !engine.IsHandleDigest(digest) {
		return engine.HandleRecord{}, engine.ErrNoHandleRecord
	}
	client, c, end, err := k.e.call(ctx)
	if err != nil {
		return engine.HandleRecord{}, err
	}
	defer end(&err)
	return findHandle(c, client, k.e.opts.Namespace, digest)
}

func findHandle(ctx context.Context, client k8s.Interface, namespace, digest string) (engine.HandleRecord, error) {
	claims, err := client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{LabelSelector: KeptLabel + "=true"})
	if err != nil {
		return engine.HandleRecord{}, fmt.Errorf("listing the kept workspaces' claims for a workspace handle: %w", err)
	}
	key := handleAnnotation(digest)
	for _, claim := range claims.Items {
		if value, ok := claim.Annotations[key]; ok {
			return handleFromClaim(&claim, value, digest)
		}
	}
	return findRoamingHandle(ctx, client, namespace, digest)
}

// handleFromClaim decodes and checks a handle's annotation: its record
// must be well formed and name the digest asked for and the claim's own
// kept workspace.
func handleFromClaim(claim *corev1.PersistentVolumeClaim, value, digest string) (engine.HandleRecord, error) {
	var rec engine.HandleRecord
	if err := json.Unmarshal([]byte(value), &rec); err != nil {
		return engine.HandleRecord{}, fmt.Errorf("the workspace handle record on claim %s is not JSON (%v); remove the annotation %s", claim.Name, err, handleAnnotation(digest))
	}
	if err := rec.Check(); err != nil || rec.Digest != digest || rec.Roaming || rec.Workspace != claim.Annotations[keptNameAnnotation] {
		return engine.HandleRecord{}, fmt.Errorf("the workspace handle record on claim %s is not well formed; remove the annotation %s", claim.Name, handleAnnotation(digest))
	}
	return rec, nil
}

// The Engine keeps the records of handles on kept workspaces in the cluster.
var _ engine.HandleStore = (*Engine)(nil)

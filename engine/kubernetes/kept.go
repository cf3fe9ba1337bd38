package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// A kept workspace (engine.KeptStore) lives in the cluster, where every
// replica sees it: its files on a PersistentVolumeClaim named from the
// kept workspace (keptObjectName), its record in the claim's annotations,
// and "one owner at a time" as a coordination.k8s.io Lease of the same
// name (kept_lease.go). Both carry KeptLabel, not the managed label, so
// that no sweep of orphans lists or removes them: only RemoveKept does.

// keptWorkspaces is the Engine's engine.KeptStore: the Engine embeds it.
type keptWorkspaces struct{ e *Engine }

// KeptLabel marks the claims and Leases of kept workspaces.
const KeptLabel = "io.wink-mcp.kept"

// The annotations of a kept workspace's claim: its record.
const (
	keptNameAnnotation      = "io.wink-mcp/kept-name"
	keptCreatedAnnotation   = "io.wink-mcp/kept-created"
	keptUsedAnnotation      = "io.wink-mcp/kept-last-used"
	keptImageAnnotation     = "io.wink-mcp/kept-image"
	keptProfileAnnotation   = "io.wink-mcp/kept-profile"
	keptPrincipalAnnotation = "io.wink-mcp/kept-principal"
)

// keptPrefix begins the names of kept workspaces' objects: apart from the
// sessions' (--name-prefix) and from the instances' Leases of the orphan
// sweep.
const keptPrefix = "wink-kept-"

var notNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// keptObjectName is the name of the claim and Lease of the kept workspace
// name: its name in lower case with what a Kubernetes name cannot hold
// replaced by '-', and a digest of the exact name, so that "A_b" and
// "a-b" stay apart.
func keptObjectName(name string) string {
	sum := sha256.Sum256([]byte(name))
	readable := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	return keptPrefix + readable + "-" + hex.EncodeToString(sum[:4])
}

// HoldKept takes the kept workspace ask.Name for ask.Holder: it makes its
// claim when missing (recording it), refuses one of another principal,
// takes its Lease (kept_lease.go) and records the use.
func (k keptWorkspaces) HoldKept(ctx context.Context, ask engine.KeptAsk) (_ *engine.Held, err error) {
	e := k.e
	if ask.Roaming {
		return k.holdRoaming(ctx, ask)
	}
	if ask.DiskBytes <= 0 {
		return nil, fmt.Errorf("kept workspace %q: a PersistentVolumeClaim needs a size: set --disk-limit (or the profile's disk limit) above 0", ask.Name)
	}
	client, c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	name := keptObjectName(ask.Name)
	claim, err := k.ensureKeptClaim(c, client, name, ask)
	if err != nil {
		return nil, err
	}
	lease, err := k.takeLease(ctx, client, name, ask, keptLeaseKind)
	if err != nil {
		return nil, err
	}
	k.recordUse(c, client, name)
	return &engine.Held{Volume: name, StoreKey: string(claim.UID), Release: func(ctx context.Context) {
		if lease.stop() {
			k.recordUse(ctx, client, name)
			lease.release(ctx)
		}
	}, Wanted: lease.wanted.Load}, nil
}

// ensureKeptClaim makes the claim of a kept workspace when missing, and
// checks that one found is that workspace's, of the same principal; it
// returns the claim.
func (k keptWorkspaces) ensureKeptClaim(ctx context.Context, client k8s.Interface, name string, ask engine.KeptAsk) (*corev1.PersistentVolumeClaim, error) {
	e := k.e
	claims := client.CoreV1().PersistentVolumeClaims(e.opts.Namespace)
	got, err := claims.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		now := time.Now().UTC().Format(time.RFC3339)
		labels := map[string]string{KeptLabel: "true"}
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.opts.Namespace, Labels: labels, Annotations: map[string]string{
				keptNameAnnotation: ask.Name, keptCreatedAnnotation: now, keptUsedAnnotation: now, keptImageAnnotation: ask.Image,
				keptProfileAnnotation: ask.Profile, keptPrincipalAnnotation: ask.Principal}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: *resource.NewQuantity(ask.DiskBytes, resource.BinarySI)}},
			},
		}
		if e.opts.StorageClass != "" {
			claim.Spec.StorageClassName = ptr.To(e.opts.StorageClass)
		}
		got, err = claims.Create(ctx, claim, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			got, err = claims.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kept workspace %q: its PersistentVolumeClaim %s/%s: %w", ask.Name, e.opts.Namespace, name, err)
	}
	switch {
	case got.Labels[KeptLabel] != "true" || got.Annotations[keptNameAnnotation] != ask.Name:
		return nil, fmt.Errorf("kept workspace %q: the PersistentVolumeClaim %s/%s exists and is not this kept workspace's (label %s, annotation %s); delete or rename it",
			ask.Name, e.opts.Namespace, name, KeptLabel, keptNameAnnotation)
	case got.Annotations[keptPrincipalAnnotation] != ask.Principal:
		return nil, fmt.Errorf("workspace %q belongs to another client (another bearer token); choose another name", ask.Name)
	case got.DeletionTimestamp != nil:
		return nil, fmt.Errorf("kept workspace %q is being removed; try again once its PersistentVolumeClaim %s is gone", ask.Name, name)
	}
	return got, nil
}

// recordUse sets the last-used time of a kept workspace's claim; a
// failure is logged, not returned: the record is for people.
func (k keptWorkspaces) recordUse(ctx context.Context, client k8s.Interface, name string) {
	e := k.e
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, keptUsedAnnotation, time.Now().UTC().Format(time.RFC3339))
	_, err := client.CoreV1().PersistentVolumeClaims(e.opts.Namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		e.log.Warn("recording the last use of a kept workspace", "claim", name, "err", err)
	}
}

// ListKept returns the kept workspaces of the namespace, each with the
// holder of its live Lease, most recently used first.
func (k keptWorkspaces) ListKept(ctx context.Context) (_ []engine.KeptRecord, err error) {
	e := k.e
	client, c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	selector := metav1.ListOptions{LabelSelector: KeptLabel + "=true"}
	claims, err := client.CoreV1().PersistentVolumeClaims(e.opts.Namespace).List(c, selector)
	if err != nil {
		return nil, fmt.Errorf("listing the kept workspaces' PersistentVolumeClaims: %w", err)
	}
	leases, err := client.CoordinationV1().Leases(e.opts.Namespace).List(c, selector)
	if err != nil {
		return nil, fmt.Errorf("listing the kept workspaces' Leases: %w", err)
	}
	var out []engine.KeptRecord
	for _, claim := range claims.Items {
		a := claim.Annotations
		r := engine.KeptRecord{Name: a[keptNameAnnotation], Volume: claim.Name, StoreKey: string(claim.UID), Image: a[keptImageAnnotation], Profile: a[keptProfileAnnotation],
			Principal: a[keptPrincipalAnnotation], RequestedBytes: claim.Spec.Resources.Requests.Storage().Value(), ProvisionStatus: string(claim.Status.Phase)}
		r.Created, _ = time.Parse(time.RFC3339, a[keptCreatedAnnotation])
		r.Used, _ = time.Parse(time.RFC3339, a[keptUsedAnnotation])
		for _, l := range leases.Items {
			if l.Name == claim.Name {
				r.Holder, r.HeldUntil = liveHolder(&l, time.Now())
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b engine.KeptRecord) int { return b.Used.Compare(a.Used) })
	return out, nil
}

// RemoveKept deletes the kept workspace name: its Lease, then its claim
// (waiting until it is gone). It refuses one whose Lease is live.
func (k keptWorkspaces) RemoveKept(ctx context.Context, name string) (err error) {
	e := k.e
	client, c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	objName := keptObjectName(name)
	leases := client.CoordinationV1().Leases(e.opts.Namespace)
	lease, err := leases.Get(c, objName, metav1.GetOptions{})
	hadLease := err == nil
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		end(&err)
		return fmt.Errorf("reading the Lease of kept workspace %q: %w", name, err)
	default:
		if holder, until := liveHolder(lease, time.Now()); holder != "" {
			end(&err)
			return fmt.Errorf("%w: workspace %q is held by %s until %s (Lease %s/%s); end that session first",
				engine.ErrKeptHeld, name, holder, until.Format(time.RFC3339), e.opts.Namespace, objName)
		}
		err = leases.Delete(c, objName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &lease.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) {
			end(&err)
			return fmt.Errorf("deleting the Lease of kept workspace %q: %w", name, err)
		}
	}
	_, err = client.CoreV1().PersistentVolumeClaims(e.opts.Namespace).Get(c, objName, metav1.GetOptions{})
	end(&err)
	if apierrors.IsNotFound(err) {
		if !hadLease {
			return fmt.Errorf("no kept workspace %q in namespace %s", name, e.opts.Namespace)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the PersistentVolumeClaim of kept workspace %q: %w", name, err)
	}
	if err := e.RemoveWorkspace(ctx, objName); err != nil {
		return fmt.Errorf("kept workspace %q: %w", name, err)
	}
	return nil
}

// errKeptClaimGone is the error of a Pod asked for on the claim of a
// kept workspace that was removed since it was held.
var errKeptClaimGone = errors.New("its PersistentVolumeClaim is gone (removed while held?)")

// The Engine keeps kept workspaces in the cluster.
var _ engine.KeptStore = (*Engine)(nil)

package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/wink-mcp/wink-mcp/engine"
)

// A workspace's /workspace is an emptyDir, gone with its Pod, unless
// Options.Claims asks for a PersistentVolumeClaim named
// Spec.WorkspaceVolume: made when missing, with the Pod's labels, a
// request of Spec.DiskBytes and access mode ReadWriteOnce, and deleted by
// RemoveWorkspace. The Pod's fsGroup, its group, gives the volume's files
// to the workspace user as the kubelet mounts it.

// usesClaim says whether the Pod of spec mounts a claim at /workspace:
// a kept workspace's always (kept.go), a session's with Options.Claims.
func usesClaim(spec engine.Spec, opts Options) bool {
	return spec.WorkspaceVolume != "" && (opts.Claims || spec.KeptWorkspace != "")
}

// claimFor returns the PersistentVolumeClaim of spec's /workspace.
func claimFor(spec engine.Spec, opts Options) *corev1.PersistentVolumeClaim {
	labels, annotation := podLabels(spec.Labels)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: spec.WorkspaceVolume, Namespace: opts.Namespace, Labels: labels,
			Annotations: map[string]string{labelsAnnotation: annotation}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(spec.DiskBytes, resource.BinarySI)}},
		},
	}
	if opts.StorageClass != "" {
		claim.Spec.StorageClassName = ptr.To(opts.StorageClass)
	}
	return claim
}

// ensureClaim makes the claim of spec's /workspace when it does not exist.
// One that exists must be a workspace's (opts.ManagedLabel): a claim of
// the namespace's other users is never mounted.
func (e *Engine) ensureClaim(ctx context.Context, client k8s.Interface, spec engine.Spec) error {
	if spec.KeptWorkspace != "" {
		return e.checkKeptClaim(ctx, client, spec)
	}
	if spec.DiskBytes <= 0 {
		return fmt.Errorf("a workspace on a PersistentVolumeClaim needs a size: set --disk-limit (or the profile's disk limit) above 0, " +
			"or pass --kubernetes-workspace-volume emptydir")
	}
	claims := client.CoreV1().PersistentVolumeClaims(e.opts.Namespace)
	got, err := claims.Get(ctx, spec.WorkspaceVolume, metav1.GetOptions{})
	if err == nil {
		if got.Labels[e.opts.ManagedLabel] != "true" {
			return fmt.Errorf("the PersistentVolumeClaim %s/%s exists and is not a wink-mcp workspace's (no label %s=true): "+
				"rename or delete it, or choose another --name-prefix", e.opts.Namespace, spec.WorkspaceVolume, e.opts.ManagedLabel)
		}
		if got.DeletionTimestamp != nil {
			return fmt.Errorf("the PersistentVolumeClaim %s/%s is being deleted; try again once it is gone", e.opts.Namespace, spec.WorkspaceVolume)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the PersistentVolumeClaim %s: %w", spec.WorkspaceVolume, err)
	}
	_, err = claims.Create(ctx, claimFor(spec, e.opts), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the PersistentVolumeClaim %s of /workspace: %w", spec.WorkspaceVolume, err)
	}
	return nil
}

// RemoveWorkspace deletes the PersistentVolumeClaim name and waits until
// it is gone (its volume goes as its StorageClass's reclaim policy says);
// a missing one is not an error. With emptyDir workspaces there is none,
// but a claim a server with Options.Claims left is still found.
func (e *Engine) RemoveWorkspace(ctx context.Context, name string) (err error) {
	client, c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	claims := client.CoreV1().PersistentVolumeClaims(e.opts.Namespace)
	err = claims.Delete(c, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting the PersistentVolumeClaim %s: %w", name, err)
	}
	// Its protection finalizer holds it while a Pod still mounts it.
	err = wait.PollUntilContextCancel(c, pollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := claims.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for the PersistentVolumeClaim %s to go: %w", name, err)
	}
	return nil
}

// listClaims returns the PersistentVolumeClaims labelled managedLabel=true.
func (e *Engine) listClaims(ctx context.Context, client k8s.Interface, managedLabel string) ([]engine.Listed, error) {
	claims, err := client.CoreV1().PersistentVolumeClaims(e.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: managedLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	var out []engine.Listed
	for _, c := range claims.Items {
		out = append(out, engine.Listed{Name: c.Name, Labels: objectLabels(c.ObjectMeta)})
	}
	return out, nil
}

// checkKeptClaim checks that the claim of a kept workspace, which HoldKept
// made, is still there.
func (e *Engine) checkKeptClaim(ctx context.Context, client k8s.Interface, spec engine.Spec) error {
	got, err := client.CoreV1().PersistentVolumeClaims(e.opts.Namespace).Get(ctx, spec.WorkspaceVolume, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && got.DeletionTimestamp != nil:
		return fmt.Errorf("kept workspace %q: %w", spec.KeptWorkspace, errKeptClaimGone)
	case err != nil:
		return fmt.Errorf("reading the PersistentVolumeClaim %s of kept workspace %q: %w", spec.WorkspaceVolume, spec.KeptWorkspace, err)
	case got.Labels[KeptLabel] != "true":
		return fmt.Errorf("the PersistentVolumeClaim %s is not kept workspace %q's (no label %s=true)", spec.WorkspaceVolume, spec.KeptWorkspace, KeptLabel)
	}
	return nil
}

package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wink-mcp/wink-mcp/engine"
)

// notAvailable is the error of an Engine method with no Kubernetes meaning yet.
func notAvailable(feature string) error {
	return fmt.Errorf("%s: %w", feature, ErrNotAvailable)
}

// EnsureImage returns the first of choices a node of the cluster has, or
// the last, which the kubelet pulls when a Pod needs it.
func (e *Engine) EnsureImage(ctx context.Context, choices []string) (string, error) {
	image, _, err := e.ChooseImage(ctx, choices)
	return image, err
}

// ChooseImage is EnsureImage; pulled is always false, as the kubelet pulls.
func (e *Engine) ChooseImage(ctx context.Context, choices []string) (image string, pulled bool, err error) {
	if len(choices) == 0 {
		return "", false, fmt.Errorf("no workspace image to choose from")
	}
	client, c, end, err := e.call(ctx)
	if err != nil {
		return "", false, err
	}
	defer end(&err)
	nodes, err := client.CoreV1().Nodes().List(c, metav1.ListOptions{})
	if err != nil {
		// Without the right to list nodes, the kubelet finds the image or pulls it.
		e.log.Debug("cannot list the cluster's nodes to choose an image", "err", err)
		return choices[0], false, nil
	}
	for _, choice := range choices {
		if onANode(nodes.Items, choice) {
			return choice, false, nil
		}
	}
	return choices[len(choices)-1], false, nil
}

// onANode reports whether a node lists image among its images.
func onANode(nodes []corev1.Node, image string) bool {
	for _, n := range nodes {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if name == image || name == "docker.io/"+image || name == "docker.io/library/"+image {
					return true
				}
			}
		}
	}
	return false
}

// ImageID is not available: profile images are made by Commit.
func (e *Engine) ImageID(context.Context, string) (string, error) {
	return "", notAvailable("the ID of an image (for a profile's setup commands)")
}

// Commit is not available: a Pod's files cannot become an image without a
// builder and a registry the cluster pulls from.
func (e *Engine) Commit(context.Context, string, string, map[string]string) error {
	return notAvailable("making an image from a setup container (a profile's setup commands)")
}

// WrittenBytes is not available: see Commit.
func (e *Engine) WrittenBytes(context.Context, string) (int64, error) {
	return 0, notAvailable("measuring a setup container's writes (a profile's setup commands)")
}

// ClearDirs is not available: see Commit.
func (e *Engine) ClearDirs(context.Context, string, []string) error {
	return notAvailable("clearing a setup container's folders (a profile's setup commands)")
}

// Images returns none: this engine makes no image.
func (e *Engine) Images(context.Context, string) ([]engine.Image, error) { return nil, nil }

// RemoveImage is not available: this engine makes no image.
func (e *Engine) RemoveImage(context.Context, string) error {
	return notAvailable("removing an image")
}

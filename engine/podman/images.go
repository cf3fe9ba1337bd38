//go:build containers_image_openpgp

package podman

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"

	"github.com/wink-mcp/wink-mcp/engine"
)

// ImageID implements engine.Engine.
func (e *Engine) ImageID(ctx context.Context, image string) (_ string, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return "", err
	}
	defer end(&err)
	img, err := images.GetImage(c, image, nil)
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", image, err)
	}
	return img.ID, nil
}

// Commit implements engine.Engine. The container keeps running: a commit
// of a paused one would also wait for every process to freeze.
func (e *Engine) Commit(ctx context.Context, name, image string, labels map[string]string) (err error) {
	connCtx, err := e.connect(ctx)
	if err != nil {
		return err
	}
	// Bounded like a pull: it writes a layer as large as what setup installed.
	c, end := within(ctx, connCtx, e.pullTimeout)
	defer end(&err)
	repo, tag, ok := strings.Cut(image, ":")
	if !ok {
		return fmt.Errorf("committing %s: the image %q has no tag", name, image)
	}
	changes := make([]string, 0, len(labels))
	for k, v := range labels {
		changes = append(changes, fmt.Sprintf("LABEL %s=%q", k, v))
	}
	if _, err := containers.Commit(c, name, new(containers.CommitOptions).WithRepo(repo).WithTag(tag).
		WithChanges(changes).WithPause(false)); err != nil {
		return fmt.Errorf("committing %s as %s: %w", name, image, err)
	}
	return nil
}

// WrittenBytes implements engine.Engine.
func (e *Engine) WrittenBytes(ctx context.Context, name string) (_ int64, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	data, err := containers.Inspect(c, name, new(containers.InspectOptions).WithSize(true))
	if err != nil {
		return 0, fmt.Errorf("inspecting container %s: %w", name, err)
	}
	if data.SizeRw == nil {
		return 0, fmt.Errorf("inspecting container %s: Podman gave no size", name)
	}
	return *data.SizeRw, nil
}

// Images implements engine.Engine.
func (e *Engine) Images(ctx context.Context, label string) (_ []engine.Image, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	found, err := images.List(c, new(images.ListOptions).WithFilters(map[string][]string{"label": {label}}))
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	out := make([]engine.Image, 0, len(found))
	for _, img := range found {
		out = append(out, engine.Image{ID: img.ID, Names: img.Names, Labels: img.Labels, Size: img.Size, Created: img.Created})
	}
	return out, nil
}

// RemoveImage implements engine.Engine.
func (e *Engine) RemoveImage(ctx context.Context, image string) (err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	_, errs := images.Remove(c, []string{image}, nil)
	for _, err := range errs {
		if isStatus(err, http.StatusNotFound) || strings.Contains(err.Error(), "image not known") {
			continue
		}
		return fmt.Errorf("removing image %s: %w", image, err)
	}
	return nil
}

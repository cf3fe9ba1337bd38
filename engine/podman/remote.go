//go:build containers_image_openpgp

package podman

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/volumes"
	entities "github.com/containers/podman/v5/pkg/domain/entities/types"

	"github.com/wink-mcp/wink-mcp/engine"
)

// A service that does not share this machine's files (ssh://, a podman
// machine VM) cannot bind-mount the session's directory: the session's
// files live in a volume on the service's host, and files cross with
// CopyIn and CopyOut. (Nor can it bind-mount the agent: see agentimage.go.)

// ensureVolume makes the workspace volume of spec when it does not exist,
// owned by the container's user.
func (e *Engine) ensureVolume(ctx context.Context, spec engine.Spec) (err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	exists, err := volumes.Exists(c, spec.WorkspaceVolume, nil)
	if err != nil || exists {
		return err
	}
	uid, gid, _ := strings.Cut(spec.User, ":")
	_, err = volumes.Create(c, entities.VolumeCreateOptions{Name: spec.WorkspaceVolume, Label: spec.Labels, Labels: spec.Labels,
		Options: map[string]string{"o": "uid=" + uid + ",gid=" + gid}}, nil)
	if err != nil && !isStatus(err, http.StatusConflict) {
		return fmt.Errorf("creating the workspace volume %s: %w", spec.WorkspaceVolume, err)
	}
	return nil
}

// CopyIn extracts the tar archive r into dir of the container name; like
// a pull, it may take a while over a slow link.
func (e *Engine) CopyIn(ctx context.Context, name, dir string, r io.Reader) (err error) {
	connCtx, err := e.connect(ctx)
	if err != nil {
		return err
	}
	c, end := within(ctx, connCtx, e.pullTimeout)
	defer end(&err)
	copyIn, err := containers.CopyFromArchive(c, name, dir, r)
	if err == nil {
		err = copyIn()
	}
	if err != nil {
		return fmt.Errorf("copying into %s:%s: %w", name, dir, err)
	}
	return nil
}

// CopyOut writes a tar archive of path in the container name to w.
func (e *Engine) CopyOut(ctx context.Context, name, path string, w io.Writer) (err error) {
	connCtx, err := e.connect(ctx)
	if err != nil {
		return err
	}
	c, end := within(ctx, connCtx, e.pullTimeout)
	defer end(&err)
	copyOut, err := containers.CopyToArchive(c, name, path, w)
	if err == nil {
		err = copyOut()
	}
	if isGone(err) {
		return fmt.Errorf("%s:%s: %w", name, path, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("copying %s:%s out: %w", name, path, err)
	}
	return nil
}

// RemoveWorkspace removes the workspace volume name.
func (e *Engine) RemoveWorkspace(ctx context.Context, name string) (err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return err
	}
	defer end(&err)
	err = volumes.Remove(c, name, new(volumes.RemoveOptions).WithForce(true))
	if err != nil && !isGone(err) {
		return fmt.Errorf("removing the workspace volume %s: %w", name, err)
	}
	return nil
}

// listVolumes returns the volumes labelled managedLabel=true.
func (e *Engine) listVolumes(ctx context.Context, managedLabel string) (_ []engine.Listed, err error) {
	c, end, err := e.call(ctx)
	if err != nil {
		return nil, err
	}
	defer end(&err)
	found, err := volumes.List(c, new(volumes.ListOptions).WithFilters(map[string][]string{"label": {managedLabel + "=true"}}))
	if err != nil {
		return nil, fmt.Errorf("listing volumes: %w", err)
	}
	out := make([]engine.Listed, 0, len(found))
	for _, v := range found {
		out = append(out, engine.Listed{Name: v.Name, Labels: v.Labels})
	}
	return out, nil
}

//go:build containers_image_openpgp

package podman

import (
	"context"
	"fmt"
	"io"

	"github.com/containers/podman/v5/pkg/bindings/images"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/types"
)

// PushOptions say how Push reaches a registry.
type PushOptions struct {
	// SkipTLSVerify turns off the registry's certificate check; off by
	// default. A private CA belongs in the registries' configuration of the
	// Podman service's host (/etc/containers/certs.d/HOST:PORT/ca.crt).
	SkipTLSVerify bool
	// Authfile is the file of the registries' credentials; "" reads the
	// usual one ($REGISTRY_AUTH_FILE, else
	// $XDG_RUNTIME_DIR/containers/auth.json, else Docker's).
	Authfile string
}

// Push sends image to the registry as dest (a reference with a tag), the
// Podman service doing the copy, and returns the digest of the manifest
// the registry stored (from the service, else asked of the registry from
// this process). It is bounded like a pull.
func (e *Engine) Push(ctx context.Context, image, dest string, opts PushOptions) (digest string, err error) {
	connCtx, err := e.connect(ctx)
	if err != nil {
		return "", err
	}
	c, end := within(ctx, connCtx, e.pullTimeout)
	defer end(&err)
	o := new(images.PushOptions).WithSkipTLSVerify(opts.SkipTLSVerify).WithQuiet(false).WithProgressWriter(io.Discard)
	if opts.Authfile != "" {
		o = o.WithAuthfile(opts.Authfile)
	}
	if err := images.Push(c, image, dest, o); err != nil {
		return "", fmt.Errorf("pushing %s to %s: %w", image, dest, err)
	}
	if digest := o.GetManifestDigest(); digest != "" {
		return digest, nil
	}
	// Podman 4 does not report the digest: the registry is asked for it,
	// with the same trust and credentials.
	ref, err := docker.ParseReference("//" + dest)
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", dest, err)
	}
	sys := &types.SystemContext{AuthFilePath: opts.Authfile, DockerInsecureSkipTLSVerify: types.NewOptionalBool(opts.SkipTLSVerify)}
	stored, err := docker.GetDigest(c, sys, ref)
	if err != nil {
		return "", fmt.Errorf("asking the registry for the digest of %s, just pushed: %w", dest, err)
	}
	return stored.String(), nil
}

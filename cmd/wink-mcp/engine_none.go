//go:build !containers_image_openpgp

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// newPodmanEngine says this build has no Podman engine: the Podman engine needs the
// Makefile's build tags (package engine/podman), which a plain `go build`
// or `go vet` leaves out so that they work without them.
func newPodmanEngine(workspace.Config, podmanService, *slog.Logger) (engine.Engine, error) {
	return nil, errors.New("this wink-mcp was built without a container engine: the Podman engine needs the build tags " +
		"of the Makefile; build it with `make build`, or see the README's install command")
}

// pushImage says this build has no Podman engine to push with.
func pushImage(context.Context, engine.Engine, string, string, pushOptions) (string, error) {
	return "", errors.New("this wink-mcp was built without a container engine, so it cannot push; build it with `make build`")
}

// imageBuilder is nil: this build has no Podman engine to build with.
func imageBuilder(engine.Engine) engine.ImageBuilder { return nil }

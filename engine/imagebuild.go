package engine

import (
	"context"
	"errors"
	"io"
)

// ImageBuilder builds images from a Dockerfile and its context (a
// project's devcontainer.json or Dockerfile). An engine that cannot build
// has none; the workspace then refuses such a project with a reason.
// Its methods are safe for concurrent use.
type ImageBuilder interface {
	// BuildImage builds req.Image from req.Context; its RUN steps share
	// the network namespace of the container req.NetworkOf, whose only
	// way out is its agent's egress proxy. No image is tagged of a
	// failure.
	BuildImage(ctx context.Context, req BuildRequest) error
}

// BuildRequest is one image build.
type BuildRequest struct {
	// Context is the build context as a tar archive.
	Context io.Reader
	// Dockerfile is the Dockerfile's path in the context.
	Dockerfile string
	// Image is the repository:tag the image gets.
	Image string
	// Labels are set on the image.
	Labels map[string]string
	// NetworkOf is the running container whose network namespace the
	// RUN steps join.
	NetworkOf string
	// Args are build arguments (the proxy's variables).
	Args map[string]string
	// Limits bound each RUN step's memory, CPUs and processes (zero
	// fields leave the engine's defaults).
	Limits Limits
	// Output, if not nil, hears each line the build prints.
	Output func(line string)
}

// ErrBuildFailed is wrapped by the error of a build that ran and failed
// (a step's error, a FROM image that is not there), as against one that
// could not reach the engine.
var ErrBuildFailed = errors.New("the image build failed")

//go:build containers_image_openpgp

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/podman"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// newPodmanEngine builds the Podman engine for w, driving the Podman
// service s names (see newEngine).
func newPodmanEngine(w workspace.Config, s podmanService, log *slog.Logger) (engine.Engine, error) {
	return podman.New(podman.Options{URL: s.url, Identity: s.identity, Machine: s.machine,
		TLSCert: s.tlsCert, TLSKey: s.tlsKey, TLSCA: s.tlsCA,
		CacheDir: w.CacheDir, APITimeout: w.APITimeout, PullTimeout: w.PullTimeout}, log), nil
}

// pushImage pushes image to dest with the Podman engine eng (only it
// builds profile images) and returns the pushed manifest's digest.
func pushImage(ctx context.Context, eng engine.Engine, image, dest string, o pushOptions) (string, error) {
	pe, ok := eng.(*podman.Engine)
	if !ok {
		return "", errors.New("--push needs the Podman engine, which built the image; drop --engine")
	}
	return pe.Push(ctx, image, dest, podman.PushOptions{SkipTLSVerify: !o.tlsVerify, Authfile: o.authfile})
}

// imageBuilder is the image builder of eng: the Podman engine's, nil for
// another engine (a project's Dockerfile is then refused with a reason).
func imageBuilder(eng engine.Engine) engine.ImageBuilder {
	if pe, ok := eng.(*podman.Engine); ok {
		return podman.NewBuilder(pe)
	}
	return nil
}

//go:build containers_image_openpgp

package main

import (
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

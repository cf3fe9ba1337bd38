//go:build containers_image_openpgp

package main

import (
	"log/slog"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/podman"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// newEngine builds the container engine w names, today always a Podman
// service's. This is the one place an engine is chosen: every package the
// engine is handed to stays engine-neutral (see package engine).
func newEngine(w workspace.Config, log *slog.Logger) (engine.Engine, error) {
	return podman.New(podman.Options{URL: w.PodmanURL, Identity: w.PodmanIdentity, Machine: w.PodmanMachine,
		TLSCert: w.PodmanTLSCert, TLSKey: w.PodmanTLSKey, TLSCA: w.PodmanTLSCA,
		CacheDir: w.CacheDir, APITimeout: w.APITimeout, PullTimeout: w.PullTimeout}, log), nil
}

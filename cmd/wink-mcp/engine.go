//go:build containers_image_openpgp

package main

import (
	"log/slog"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/engine/podman"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// newEngine builds the container engine for w, today always the Podman
// service s names. This is the one place an engine is chosen: every
// package the engine is handed to stays engine-neutral (see package
// engine), and learns of its service through engine.Engine.
func newEngine(w workspace.Config, s podmanService, log *slog.Logger) (engine.Engine, error) {
	return podman.New(podman.Options{URL: s.url, Identity: s.identity, Machine: s.machine,
		TLSCert: s.tlsCert, TLSKey: s.tlsKey, TLSCA: s.tlsCA,
		CacheDir: w.CacheDir, APITimeout: w.APITimeout, PullTimeout: w.PullTimeout}, log), nil
}

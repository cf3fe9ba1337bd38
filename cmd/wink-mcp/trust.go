package main

import (
	"crypto/x509"
	"fmt"
	"os"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// maxCABundle bounds a --ca-bundle file.
const maxCABundle = 4 << 20

// resolveTrust reads --credentials (values through lookup) and checks
// --ca-bundle, both at start, so that a mistake stops the server with an
// error naming the entry and field rather than failing a session later.
func resolveTrust(w *workspace.Config, credentials string, lookup func(string) (string, bool)) error {
	if credentials != "" {
		cs, err := egress.LoadCredentials(expandHome(credentials), lookup)
		if err != nil {
			return err
		}
		w.Credentials = cs
	}
	if w.EgressCacheDir != "" {
		w.EgressCacheDir = expandHome(w.EgressCacheDir)
	}
	if w.CABundle == "" {
		return nil
	}
	w.CABundle = expandHome(w.CABundle)
	return checkCABundle(w.CABundle)
}

// checkCABundle says why path is not a bundle of PEM certificates, if it is not.
func checkCABundle(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("--ca-bundle: %w", err)
	}
	if info.Size() > maxCABundle {
		return fmt.Errorf("--ca-bundle %s: %d bytes, more than the %d a CA bundle may hold", path, info.Size(), maxCABundle)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--ca-bundle: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return fmt.Errorf("--ca-bundle %s: no PEM certificate in it (want -----BEGIN CERTIFICATE----- blocks)", path)
	}
	return nil
}

package doctor

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
)

// caWarnBefore is how long before a CA ends the line warns.
const caWarnBefore = 30 * 24 * time.Hour

// trust checks --credentials (its entries, the hosts the egress allows of
// them), the CA that credentials and the artefact cache need (when it
// ends) and --ca-bundle (its certificates and when the first ends).
func (d *doctor) trust(context.Context) Result {
	var parts, warns []string
	if d.cfg.Credentials == nil && d.cfg.CABundle == "" && !d.cfg.EgressCacheOn() {
		return Result{Status: OK, Detail: "off: no credentials are injected, and the containers trust their image's roots only (--credentials, --ca-bundle)"}
	}
	if cs := d.cfg.Credentials; cs != nil {
		parts = append(parts, fmt.Sprintf("--credentials %s: %d entries (%s), valid", cs.Path, len(cs.Names()), strings.Join(cs.Names(), ", ")))
		policy, _ := egress.ParsePolicy(d.allowedPatterns())
		for _, name := range cs.Names() {
			for _, pat := range cs.Get(name).Patterns() {
				if !allowedSomewhere(policy, pat) && !d.cfg.EgressAsk {
					warns = append(warns, fmt.Sprintf("%s's host %s is not allowed by --egress or a profile's egress.session, so it is never used", name, pat))
				}
			}
		}
	}
	if d.cfg.Credentials == nil && d.cfg.EgressCacheOn() {
		parts = append(parts, "no credentials are injected; the containers trust the egress CA, which intercepts the artefact cache's hosts")
	}
	if d.cfg.Credentials != nil || d.cfg.EgressCacheOn() {
		ca, err := egress.ReadAuthority(d.cfg.CacheDir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			parts = append(parts, "the CA is made at the first start in "+filepath.Join(d.cfg.CacheDir, egress.CADirName))
		case err != nil:
			return Result{Status: Fail, Detail: strings.Join(parts, "; ") + "; " + err.Error(), Fix: "follow the error; a removed CA directory is made again at start"}
		default:
			dir := filepath.Join(d.cfg.CacheDir, egress.CADirName)
			if info, err := os.Stat(dir); err == nil && info.Mode().Perm()&0o077 != 0 {
				return Result{Status: Fail, Detail: fmt.Sprintf("the egress CA's directory %s has mode %04o: other users may list it, or replace the CA and its key with ones they know", dir, info.Mode().Perm()),
					Fix: "chmod 700 " + dir + " (wink-mcp makes it so), or remove it to make a new CA at the next start"}
			}
			parts = append(parts, fmt.Sprintf("CA in %s (directory 0700, key 0600) valid until %s", dir, ca.NotAfter().Format(time.DateOnly)))
			if time.Until(ca.NotAfter()) < caWarnBefore {
				warns = append(warns, "the CA ends within 30 days; remove its directory and restart to make a new one")
			}
		}
	}
	if d.cfg.CABundle != "" {
		n, first, err := bundleFacts(d.cfg.CABundle)
		if err != nil {
			return Result{Status: Fail, Detail: "--ca-bundle " + d.cfg.CABundle + ": " + err.Error(), Fix: "give a PEM file of the CA certificates your network needs"}
		}
		parts = append(parts, fmt.Sprintf("--ca-bundle %s: %d certificates, the first to end on %s", d.cfg.CABundle, n, first.Format(time.DateOnly)))
		if time.Now().After(first) {
			warns = append(warns, "a certificate of --ca-bundle has ended")
		}
	}
	r := Result{Status: OK, Detail: strings.Join(parts, "; ")}
	if len(warns) > 0 {
		r.Status, r.Detail, r.Fix = Warn, r.Detail+"; "+strings.Join(warns, "; "), "allow the credentials' hosts with --egress, and renew what has ended"
	}
	return r
}

// allowedPatterns are the server's egress patterns and every profile's
// session patterns.
func (d *doctor) allowedPatterns() []string {
	all := append([]string{}, d.cfg.Egress...)
	if d.cfg.Profiles != nil {
		for _, p := range d.cfg.Profiles.Profiles {
			all = append(all, p.Egress.Session...)
		}
	}
	return all
}

// allowedSomewhere says whether the host (and port) of a credential's
// pattern is allowed by policy; a wildcard is taken as one name under it.
func allowedSomewhere(policy egress.Policy, pattern string) bool {
	rules, err := egress.ParsePolicy([]string{pattern})
	if err != nil {
		return false
	}
	r := rules.Rules()[0]
	host, port := r.Host, 443
	if r.Wildcard {
		host = "x." + host
	}
	if r.PortGiven {
		port = r.Ports[0]
	}
	_, ok := policy.Match(host, port)
	return ok
}

// bundleFacts counts the certificates of a PEM file and says when the
// first of them ends.
func bundleFacts(path string) (int, time.Time, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, first := 0, time.Time{}
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if b.Type != "CERTIFICATE" || err != nil {
			continue
		}
		if n++; first.IsZero() || c.NotAfter.Before(first) {
			first = c.NotAfter
		}
	}
	if n == 0 {
		return 0, time.Time{}, errors.New("no PEM certificate in it")
	}
	return n, first, nil
}

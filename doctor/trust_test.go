package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace"
)

func TestTrustCheck(t *testing.T) {
	cfg := workspace.DefaultConfig()
	if r := (&doctor{cfg: cfg}).trust(context.Background()); r.Status != OK || !strings.Contains(r.Detail, "off") {
		t.Fatalf("without the flags: %+v", r)
	}
	cfg.CacheDir = t.TempDir()
	cs, err := egress.ParseCredentials("c.yaml", []byte("credentials:\n  api: {hosts: [api.example.com], bearer: {env: T}}\n"),
		func(string) (string, bool) { return "tok", true })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Credentials = cs
	r := (&doctor{cfg: cfg}).trust(context.Background())
	if r.Status != Warn || !strings.Contains(r.Detail, "api's host api.example.com is not allowed") || !strings.Contains(r.Detail, "made at the first start") {
		t.Fatalf("a credential for a host no pattern allows, before the CA: %+v", r)
	}
	if _, err := egress.LoadAuthority(cfg.CacheDir); err != nil {
		t.Fatal(err)
	}
	ca, err := egress.ReadAuthority(cfg.CacheDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Egress = []string{"*.example.com"}
	cfg.CABundle = filepath.Join(cfg.CacheDir, egress.CADirName, "ca.pem")
	r = (&doctor{cfg: cfg}).trust(context.Background())
	until := ca.NotAfter().Format(time.DateOnly)
	if r.Status != OK || !strings.Contains(r.Detail, "valid until "+until) || !strings.Contains(r.Detail, "1 certificates, the first to end on "+until) {
		t.Fatalf("with the CA and a bundle: %+v", r)
	}
	if strings.Contains(r.Detail, "tok") {
		t.Fatalf("the line shows a value: %s", r.Detail)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(empty, []byte("not a certificate"), 0o644)
	cfg.CABundle = empty
	if r := (&doctor{cfg: cfg}).trust(context.Background()); r.Status != Fail || !strings.Contains(r.Detail, "no PEM certificate") {
		t.Fatalf("an empty bundle: %+v", r)
	}
	caDir := filepath.Join(cfg.CacheDir, egress.CADirName)
	os.Chmod(caDir, 0o755)
	cfg.CABundle = ""
	if r := (&doctor{cfg: cfg}).trust(context.Background()); r.Status != Fail || !strings.Contains(r.Detail, "mode 0755") || !strings.Contains(r.Fix, "chmod 700 "+caDir) {
		t.Fatalf("a CA directory others may list: %+v", r)
	}
	os.Chmod(caDir, 0o700)
	os.Chmod(filepath.Join(caDir, "ca-key.pem"), 0o644)
	if r := (&doctor{cfg: cfg}).trust(context.Background()); r.Status != Fail || !strings.Contains(r.Detail, "chmod 600") {
		t.Fatalf("a key others may read: %+v", r)
	}
}

package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/egress"
	"github.com/wink-mcp/wink-mcp/workspace"
)

func TestEgressCacheCheck(t *testing.T) {
	roomy := fakeHost{free: 100 << 30}
	cfg := workspace.DefaultConfig()
	if r := (&doctor{cfg: cfg, host: roomy}).egressCache(context.Background()); r.Status != OK || !strings.Contains(r.Detail, "off") {
		t.Fatalf("without the flag: %+v", r)
	}
	cfg.CacheDir = t.TempDir()
	cfg.EgressCache = []string{"proxy.example"}
	r := (&doctor{cfg: cfg, host: roomy}).egressCache(context.Background())
	if r.Status != OK || !strings.Contains(r.Detail, "0 entries") || !strings.Contains(r.Detail, "of 2048 MiB") {
		t.Fatalf("an empty cache: %+v", r)
	}
	if _, err := egress.OpenCache(filepath.Join(cfg.CacheDir, egress.CacheDirName), egress.MinCacheBytes); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(cfg.CacheDir, egress.CacheDirName, "ab", "ab.json")
	os.MkdirAll(filepath.Dir(side), 0o700)
	os.WriteFile(side, []byte(`{"size": 3145728}`), 0o600)
	if r := (&doctor{cfg: cfg, host: roomy}).egressCache(context.Background()); r.Status != OK || !strings.Contains(r.Detail, "1 entries, 3 MiB") {
		t.Fatalf("one entry: %+v", r)
	}
	small := fakeHost{free: 5 << 20}
	if r := (&doctor{cfg: cfg, host: small}).egressCache(context.Background()); r.Status != Warn || !strings.Contains(r.Detail, "5 MiB free, less than the 2045 MiB the cache may still grow by") || !strings.Contains(r.Fix, "--egress-cache-size") {
		t.Fatalf("a disk without room for the cache: %+v", r)
	}
	cfg.EgressCacheDir = "/proc/nowhere" // not even root makes a directory there
	if r := (&doctor{cfg: cfg, host: roomy}).egressCache(context.Background()); r.Status != Fail || !strings.Contains(r.Detail, "not writable") {
		t.Fatalf("an unwritable directory: %+v", r)
	}
}

// With the cache on and no credentials, the credentials line says the
// containers trust the egress CA, and where it is.
func TestTrustLineWithTheCacheOnly(t *testing.T) {
	cfg := workspace.DefaultConfig()
	cfg.CacheDir = t.TempDir()
	cfg.EgressCache = []string{"proxy.example"}
	r := (&doctor{cfg: cfg}).trust(context.Background())
	if r.Status != OK || !strings.Contains(r.Detail, "the containers trust the egress CA") || !strings.Contains(r.Detail, "made at the first start") {
		t.Fatalf("%+v", r)
	}
}

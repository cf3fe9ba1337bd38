package keep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
)

// TestHandleFilesKeepDigestsBesideTheirWorkspace follows a handle's record
// on the cache disk: found by digest from any workspace, never holding the
// handle, touched while there, gone after a delete (and a touch does not
// bring it back).
func TestHandleFilesKeepDigestsBesideTheirWorkspace(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	f := &HandleFiles{CacheDir: cache}
	handle := "wsh_secret-handle"
	rec := engine.HandleRecord{Digest: engine.HandleDigest(handle), Principal: "p1", Workspace: "proj", Profile: "go", Used: time.Unix(100, 0).UTC()}
	if err := f.PutHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(Root(cache, "proj"), HandlesDir, rec.Digest+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the record is not beside its workspace: %v", err)
	}
	if strings.Contains(string(data), "secret-handle") {
		t.Fatalf("the record holds the handle: %s", data)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want 0600", info.Mode().Perm())
	}
	got, err := f.FindHandle(ctx, rec.Digest)
	if err != nil || got != rec {
		t.Fatalf("FindHandle = %+v, %v; want %+v", got, err, rec)
	}
	for _, digest := range []string{engine.HandleDigest("wsh_other"), handle, "../../x", ""} {
		if _, err := f.FindHandle(ctx, digest); !errors.Is(err, engine.ErrNoHandleRecord) {
			t.Errorf("FindHandle(%q) = %v; want ErrNoHandleRecord", digest, err)
		}
	}
	rec.Used = time.Unix(200, 0).UTC()
	if err := f.TouchHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.FindHandle(ctx, rec.Digest); !got.Used.Equal(rec.Used) {
		t.Errorf("after a touch, used %v; want %v", got.Used, rec.Used)
	}
	if err := f.DeleteHandle(ctx, "proj", rec.Digest); err != nil {
		t.Fatal(err)
	}
	if err := f.DeleteHandle(ctx, "proj", rec.Digest); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	if err := f.TouchHandle(ctx, rec); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("a touch after the delete: %v; want ErrNoHandleRecord", err)
	}
	if _, err := f.FindHandle(ctx, rec.Digest); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("a deleted record was found: %v", err)
	}
}

// TestHandleFilesRefuseWhatTheyDidNotWrite: a record in another
// workspace's directory than it names, or not JSON, is refused, not served.
func TestHandleFilesRefuseWhatTheyDidNotWrite(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	f := &HandleFiles{CacheDir: cache}
	rec := engine.HandleRecord{Digest: engine.HandleDigest("wsh_a"), Principal: "p1", Workspace: "proj", Used: time.Unix(100, 0).UTC()}
	if err := f.PutHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(Root(cache, "other"), HandlesDir)
	if err := os.MkdirAll(moved, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(Root(cache, "proj"), HandlesDir, rec.Digest+".json"), filepath.Join(moved, rec.Digest+".json")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.FindHandle(ctx, rec.Digest); err == nil || !strings.Contains(err.Error(), "not well formed") {
		t.Errorf("a record moved to another workspace: %v; want refused", err)
	}
	if err := os.WriteFile(filepath.Join(moved, rec.Digest+".json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.FindHandle(ctx, rec.Digest); err == nil || errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("a record that is not JSON: %v; want an error naming it", err)
	}
	bad := rec
	bad.Workspace = "../escape"
	if err := f.PutHandle(ctx, bad); err == nil {
		t.Error("a record naming no kept workspace was written")
	}
}

// TestHandleFilesTouchNeverRevivesARecordACrowdDeletes: touches racing a
// delete either land before it or find the record gone; none writes it back.
func TestHandleFilesTouchNeverRevivesARecordACrowdDeletes(t *testing.T) {
	ctx := context.Background()
	f := &HandleFiles{CacheDir: t.TempDir()}
	rec := engine.HandleRecord{Digest: engine.HandleDigest("wsh_c"), Workspace: "proj", Used: time.Unix(100, 0).UTC()}
	if err := f.PutHandle(ctx, rec); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 16 {
				_ = f.DeleteHandle(ctx, "proj", rec.Digest)
				return
			}
			_ = f.TouchHandle(ctx, rec)
		}()
	}
	wg.Wait()
	if _, err := f.FindHandle(ctx, rec.Digest); !errors.Is(err, engine.ErrNoHandleRecord) {
		t.Errorf("after the crowd: %v; want the record gone", err)
	}
}

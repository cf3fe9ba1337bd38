package keep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckWorkspaceNameRefusesWhatIsNotOneDirectory: a name is one
// directory under the cache, never a path out of it, and the refusal
// says what a name may be.
func TestCheckWorkspaceNameRefusesWhatIsNotOneDirectory(t *testing.T) {
	for _, ok := range []string{"a", "proj-1", "v1.2_x", strings.Repeat("a", 64)} {
		if err := CheckWorkspaceName(ok); err != nil {
			t.Errorf("CheckWorkspaceName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", "-a", ".a", "a b", strings.Repeat("a", 65), "a\x00"} {
		err := CheckWorkspaceName(bad)
		if err == nil || !strings.Contains(err.Error(), "1-64 letters") {
			t.Errorf("CheckWorkspaceName(%q) = %v, want the rule named", bad, err)
		}
	}
}

// TestRecordAndOwnerReadBackFromTheirFiles: a record and an owner written
// where Root lays them out read back as they were, and what cannot be
// read is said, never taken for an empty record.
func TestRecordAndOwnerReadBackFromTheirFiles(t *testing.T) {
	root := Root(t.TempDir(), "proj")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecord(root); !os.IsNotExist(err) {
		t.Fatalf("ReadRecord of a missing record = %v, want not-exist", err)
	}
	if got := DescribeOwner(root); got != "another wink-mcp process" {
		t.Errorf("DescribeOwner without an owner file = %q", got)
	}
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(RecordFile, `{"name":"proj","created":"2026-01-02T03:04:05Z","last_used":"2026-01-02T03:04:05Z","egress_bytes":7,"from_handoff":true}`)
	write(OwnerFile, `{"pid":42,"host":"h","instance":"i","session":"s","since":"2026-01-02T03:04:05Z"}`)
	rec, err := ReadRecord(root)
	if err != nil || rec.Name != "proj" || !rec.LastUsed.Equal(since) || rec.EgressBytes != 7 || !rec.FromHandoff {
		t.Errorf("ReadRecord = %+v, %v", rec, err)
	}
	if got, want := DescribeOwner(root), "wink-mcp process 42 on h (session s, since 2026-01-02T03:04:05Z)"; got != want {
		t.Errorf("DescribeOwner = %q, want %q", got, want)
	}
	var o WorkspaceOwner
	if err := ReadJSON(filepath.Join(root, OwnerFile), &o); err != nil || o.String() != "in use by process 42 on h, session s, since 2026-01-02T03:04:05Z" {
		t.Errorf("owner = %q, %v", o.String(), err)
	}
	write(RecordFile, `{"name":`)
	if _, err := ReadRecord(root); err == nil || !strings.Contains(err.Error(), RecordFile) {
		t.Errorf("ReadRecord of a torn record = %v, want an error naming the file", err)
	}
}

// TestHandlesAreLookedUpByTheirDigestOnly: a handle is 256 random bits,
// each new one different, and the key its file is named by is its
// digest, never the handle itself.
func TestHandlesAreLookedUpByTheirDigestOnly(t *testing.T) {
	seen := map[string]bool{}
	for range 64 {
		h := NewHandle()
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" || seen[h] {
			t.Fatalf("NewHandle() = %q: want 64 hex digits, each handle new", h)
		}
		seen[h] = true
		key := HandleKey(h)
		if key == h || len(key) != 64 || HandleKey(h) != key {
			t.Fatalf("HandleKey(%q) = %q: want its stable SHA-256, not the handle", h, key)
		}
	}
}

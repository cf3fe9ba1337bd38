package detect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   []string
		profile string
		marker  string
		others  []string
	}{
		{name: "go", files: []string{"go.mod", "main.go"}, profile: "go", marker: "go.mod"},
		{name: "node", files: []string{"package.json"}, profile: "node", marker: "package.json"},
		{name: "python pyproject", files: []string{"pyproject.toml"}, profile: "python", marker: "pyproject.toml"},
		{name: "python requirements", files: []string{"requirements.txt", "app.py"}, profile: "python", marker: "requirements.txt"},
		{name: "rust", files: []string{"Cargo.toml", "src/main.rs"}, profile: "rust", marker: "Cargo.toml"},
		{name: "go before node", files: []string{"package.json", "go.mod"}, profile: "go", marker: "go.mod", others: []string{"package.json"}},
		{name: "rust before node", files: []string{"package.json", "Cargo.toml"}, profile: "rust", marker: "Cargo.toml", others: []string{"package.json"}},
		{name: "node before python", files: []string{"requirements.txt", "package.json"}, profile: "node", marker: "package.json", others: []string{"requirements.txt"}},
		{name: "nothing", files: []string{"README.md", "main.c"}},
		{name: "a marker below the top says nothing", files: []string{"tools/go.mod"}},
		{name: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, f := range tt.files {
				write(t, filepath.Join(dir, f))
			}
			got, err := Detect(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Profile != tt.profile || got.Marker != tt.marker || !slices.Equal(got.Others, tt.others) || got.Found() != (tt.profile != "") {
				t.Fatalf("Detect = %+v, want profile %q marker %q others %v", got, tt.profile, tt.marker, tt.others)
			}
			if got.Reason == "" {
				t.Fatal("no reason")
			}
			if tt.profile != "" && !strings.Contains(got.Reason, tt.marker) {
				t.Fatalf("reason %q does not name %s", got.Reason, tt.marker)
			}
			for _, o := range tt.others {
				if !strings.Contains(got.Reason, o) {
					t.Fatalf("reason %q does not name %s", got.Reason, o)
				}
			}
		})
	}
}

// TestDetectFollowsNoLink: a marker that is a link (here to a file
// outside the folder) or a folder decides nothing.
func TestDetectFollowsNoLink(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "go.mod")
	write(t, outside)
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "package.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Detect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Found() {
		t.Fatalf("a link or a folder decided: %+v", got)
	}
}

func TestDetectRefusesWhatIsNoFolder(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	write(t, file)
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		if _, err := Detect(dir); err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Detect(%s) = %v, want an error naming it", dir, err)
		}
	}
}

func write(t *testing.T, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

package workspace

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/testtree"
)

func TestCopyMountHonoursFiltersAndBudget(t *testing.T) {
	root, folder := testtree.Host(t, map[string]string{
		"main.go": "package main\n", "go.mod": "module x\n", "README.md": "# x\n",
		"vendor/dep/dep.go": "package dep\n", "internal/a.go": "package internal\n", "big.go": strings.Repeat("x", 5000),
	})
	if err := os.Symlink("main.go", filepath.Join(folder, "alias.go")); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.go")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(folder, "outside.go")); err != nil {
		t.Fatal(err)
	}
	mount := Mount{HostPath: folder, Mode: MountCopy, Include: []string{"**/*.go", "go.mod"}, Exclude: []string{"vendor", "big.go"}, FollowSymlinks: true}
	m, _, _ := newTestManager(t, func(c *Config) { c.Mounts, c.AllowedRoots = []Mount{mount}, []string{root} })
	s, _ := m.Session("s")
	echo(t, s, "true")
	ws := s.workspaceDir()
	got := map[string]string{}
	filepath.Walk(filepath.Join(ws, "proj"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(filepath.Join(ws, "proj"), p)
			data, _ := os.ReadFile(p)
			if info.Mode()&os.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				data = []byte("-> " + target)
			}
			got[rel] = string(data)
		}
		return nil
	})
	want := map[string]string{"main.go": "package main\n", "go.mod": "module x\n", "internal/a.go": "package internal\n",
		"alias.go": "package main\n", "outside.go": "-> " + secret}
	if len(got) != len(want) {
		t.Fatalf("copied %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (a followed link inside the roots is a file; one leading out stays a link)", k, got[k], v)
		}
	}

	tight := mount
	tight.Include, tight.Exclude, tight.MaxBytes = nil, nil, 100
	m2, _, _ := newTestManager(t, func(c *Config) { c.Mounts, c.AllowedRoots = []Mount{tight}, []string{root} })
	s2, _ := m2.Session("s")
	_, err := s2.Exec(ctx, ExecRequest{Argv: []string{"true"}, Timeout: 10e9})
	if err == nil || !strings.Contains(err.Error(), "more than max_bytes (100 bytes)") {
		t.Fatalf("a copy over its budget: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s2.workspaceDir(), "proj")); len(entries) != 0 {
		t.Errorf("a copy over budget copied %d entries; it must copy nothing", len(entries))
	}
}

// A copy mount's changes, diff and exported patch, with the session's
// files here and on the Podman host (where the copy is uploaded and brought
// back to be read).
func TestCopyMountChangesDiffAndExport(t *testing.T) {
	for _, onPodmanHost := range []bool{false, true} {
		t.Run(fmt.Sprintf("files on the Podman host %v", onPodmanHost), func(t *testing.T) {
			testCopyMountChangesDiffAndExport(t, onPodmanHost)
		})
	}
}

func testCopyMountChangesDiffAndExport(t *testing.T, onPodmanHost bool) {
	root, folder := testtree.Host(t, map[string]string{"a.txt": "one\ntwo\n", "gone.txt": "bye\n", "sub/keep.txt": "keep\n"})
	exportDir := t.TempDir()
	m, _, _ := newTestManager(t, func(c *Config) {
		c.Mounts, c.AllowedRoots, c.ExportDir = []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}, exportDir
		c.FilesOnEngineHost = onPodmanHost
	})
	s, _ := m.Session("s")
	if changes, err := s.folders.Changes(ctx, ""); err != nil || len(changes) != 0 {
		t.Fatalf("changes before any call: %v %v", changes, err)
	}
	if _, err := s.files.WriteFile(ctx, "proj/a.txt", "one\n2\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.files.WriteFile(ctx, "proj/new.txt", "new\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.files.Remove(ctx, "proj/gone.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.files.WriteFile(ctx, "scratch.txt", "not in a mount\n"); err != nil {
		t.Fatal(err)
	}
	list, err := s.folders.Changes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list {
		got = append(got, string(c.Status)+" "+c.Path)
	}
	if strings.Join(got, ", ") != "modified proj/a.txt, deleted proj/gone.txt, created proj/new.txt" {
		t.Errorf("changes: %v", got)
	}
	if only, _ := s.folders.Changes(ctx, "proj/new.txt"); len(only) != 1 {
		t.Errorf("changes under proj/new.txt: %v", only)
	}
	diff, err := s.folders.Diff(ctx, "")
	if err != nil || !strings.Contains(diff.Text, "diff --git a/proj/a.txt b/proj/a.txt") || !strings.Contains(diff.Text, "-two\n+2\n") {
		t.Fatalf("diff %v:\n%s", err, diff.Text)
	}

	before, _ := os.ReadFile(filepath.Join(folder, "a.txt"))
	m.EndSession(ctx, "s")
	if after, _ := os.ReadFile(filepath.Join(folder, "a.txt")); !bytes.Equal(before, after) || string(after) != "one\ntwo\n" {
		t.Fatalf("the host copy changed: %q", after)
	}
	patches, _ := filepath.Glob(filepath.Join(exportDir, "*", "proj.patch"))
	if len(patches) != 1 {
		t.Fatalf("exported %v, want one proj.patch", patches)
	}
	copyDir := t.TempDir()
	if out, err := exec.Command("cp", "-a", folder+"/.", copyDir).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	cmd := exec.Command("git", "apply", patches[0])
	cmd.Dir = copyDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	for name, want := range map[string]string{"a.txt": "one\n2\n", "new.txt": "new\n", "sub/keep.txt": "keep\n"} {
		if data, _ := os.ReadFile(filepath.Join(copyDir, name)); string(data) != want {
			t.Errorf("%s after the patch = %q, want %q", name, data, want)
		}
	}
	if _, err := os.Stat(filepath.Join(copyDir, "gone.txt")); !os.IsNotExist(err) {
		t.Error("gone.txt survived the patch")
	}
}

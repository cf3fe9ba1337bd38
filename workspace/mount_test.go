package workspace

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostTree makes a folder of files under a new allowed root and returns both.
func hostTree(t *testing.T, files map[string]string) (root, folder string) {
	t.Helper()
	root = t.TempDir()
	folder = filepath.Join(root, "proj")
	for name, content := range files {
		p := filepath.Join(folder, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, folder
}

func TestResolveMountsRefusesWhatItShould(t *testing.T) {
	root, folder := hostTree(t, map[string]string{"a.txt": "a"})
	outside := t.TempDir()
	file := filepath.Join(folder, "a.txt")
	link := filepath.Join(root, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for _, tc := range []struct {
		name    string
		mounts  []Mount
		roots   []string
		wantErr string
	}{
		{name: "no allowed root", mounts: []Mount{{HostPath: folder}}, wantErr: "add --allowed-root"},
		{name: "outside the roots", mounts: []Mount{{HostPath: outside}}, roots: []string{root}, wantErr: "outside the allowed roots"},
		{name: "a link out of the root", mounts: []Mount{{HostPath: link}}, roots: []string{root}, wantErr: "outside the allowed roots"},
		{name: "missing", mounts: []Mount{{HostPath: filepath.Join(root, "nope")}}, roots: []string{root}, wantErr: "does not exist"},
		{name: "a file", mounts: []Mount{{HostPath: file}}, roots: []string{root}, wantErr: "not a directory"},
		{name: "missing root", mounts: []Mount{{HostPath: folder}}, roots: []string{filepath.Join(root, "nope")}, wantErr: "--allowed-root"},
		{name: "same path twice", mounts: []Mount{{HostPath: folder}, {HostPath: outside, Path: "proj"}}, roots: []string{root, outside}, wantErr: "overlaps"},
		{name: "nested paths", mounts: []Mount{{HostPath: folder, Path: "a"}, {HostPath: outside, Path: "a/b"}}, roots: []string{root, outside}, wantErr: "overlaps"},
		{name: "workspace root", mounts: []Mount{{HostPath: folder, Path: "."}}, roots: []string{root}, wantErr: "/workspace itself"},
		{name: "bad workspace path", mounts: []Mount{{HostPath: folder, Path: "../up"}}, roots: []string{root}, wantErr: "leaves the workspace"},
		{name: "filters without copy", mounts: []Mount{{HostPath: folder, Include: []string{"*.go"}}}, roots: []string{root}, wantErr: "copy mounts only"},
		{name: "bad glob", mounts: []Mount{{HostPath: folder, Mode: MountCopy, Include: []string{"[a-"}}}, roots: []string{root}, wantErr: `include "[a-"`},
		{name: "the cache", mounts: []Mount{{HostPath: cache}}, roots: []string{cache}, wantErr: "cache directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Mounts: tc.mounts, AllowedRoots: tc.roots, CacheDir: filepath.Join(cache, "c")}
			if tc.name == "the cache" {
				cfg.CacheDir = cache
			}
			_, err := cfg.planMounts()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
	plan, err := Config{Mounts: []Mount{{HostPath: folder + "/"}, {HostPath: outside, Path: "./docs/", Mode: MountReadOnly}},
		AllowedRoots: []string{root, outside}, CacheDir: cache, User: "1000:1000"}.planMounts()
	if err != nil {
		t.Fatal(err)
	}
	got := plan.mounts
	if got[0].Path != "proj" || got[0].Mode != MountOverlay || got[1].Path != "docs" || got[1].HostPath != outside {
		t.Errorf("resolved %+v", got)
	}
}

func TestWritableMountsNeedOneNonRootOwner(t *testing.T) {
	m := func(uid int, mode MountMode) resolvedMount {
		return resolvedMount{Mount: Mount{HostPath: "/h", Path: "p", Mode: mode}, uid: uid, gid: uid}
	}
	if o, err := writableOwner([]resolvedMount{m(1000, MountOverlay), m(0, MountReadOnly), m(1000, MountOverlay)}); err != nil || o != "1000:1000" {
		t.Errorf("owner %q, %v", o, err)
	}
	if _, err := writableOwner([]resolvedMount{m(0, MountOverlay)}); err == nil || !strings.Contains(err.Error(), "owned by root") {
		t.Errorf("a root-owned writable mount: %v", err)
	}
	if _, err := writableOwner([]resolvedMount{m(1000, MountOverlay), m(1001, MountOverlay)}); err == nil || !strings.Contains(err.Error(), "one user") {
		t.Errorf("two owners: %v", err)
	}
	if o, err := writableOwner([]resolvedMount{m(0, MountCopy)}); err != nil || o != "" {
		t.Errorf("a copy mount needs no owner: %q, %v", o, err)
	}
}

func TestCopyMountHonoursFiltersAndBudget(t *testing.T) {
	root, folder := hostTree(t, map[string]string{
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
	root, folder := hostTree(t, map[string]string{"a.txt": "one\ntwo\n", "gone.txt": "bye\n", "sub/keep.txt": "keep\n"})
	exportDir := t.TempDir()
	m, _, _ := newTestManager(t, func(c *Config) {
		c.Mounts, c.AllowedRoots, c.ExportDir = []Mount{{HostPath: folder, Mode: MountCopy}}, []string{root}, exportDir
		c.FilesOnPodmanHost = onPodmanHost
	})
	s, _ := m.Session("s")
	if changes, err := s.Changes(ctx, ""); err != nil || len(changes) != 0 {
		t.Fatalf("changes before any call: %v %v", changes, err)
	}
	if _, err := s.WriteFile(ctx, "proj/a.txt", "one\n2\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(ctx, "proj/new.txt", "new\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(ctx, "proj/gone.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(ctx, "scratch.txt", "not in a mount\n"); err != nil {
		t.Fatal(err)
	}
	list, err := s.Changes(ctx, "")
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
	if only, _ := s.Changes(ctx, "proj/new.txt"); len(only) != 1 {
		t.Errorf("changes under proj/new.txt: %v", only)
	}
	diff, err := s.Diff(ctx, "")
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

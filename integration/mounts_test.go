package integration

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wink-mcp/wink-mcp/tools"
)

// hostUID owns the host folders the tests mount, as a developer's checkout
// is owned by its developer; the workspace then runs as that user.
const hostUID = 1000

// secretToken is the content of a host file outside the mounted folders;
// it must never come back through a tool, a diff or a patch.
const secretToken = "HOST-SECRET-5e1f0c"

// project makes a host folder under a new allowed root, owned by hostUID.
func project(t *testing.T) (root, folder string) {
	t.Helper()
	root = t.TempDir()
	folder = filepath.Join(root, "proj")
	files := map[string]string{
		"README.md":      "# proj\n\nsome text\n",
		"src/main.go":    "package main\n\nfunc main() {}\n",
		"src/old.go":     "package main // old\n",
		"lib/a/b.txt":    "deep\n",
		"run.sh":         "#!/bin/sh\necho run\n",
		"data.bin":       "\x00\x01binary\x00",
		"docs/guide.txt": "guide\n",
	}
	for name, content := range files {
		p := filepath.Join(folder, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, os.Chmod(filepath.Join(folder, "run.sh"), 0o755))
	must(t, os.Symlink("README.md", filepath.Join(folder, "link")))
	must(t, filepath.WalkDir(folder, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, hostUID, hostUID)
	}))
	return root, folder
}

// changeStatuses calls workspace_changes and returns each path's status,
// and the whole answer.
func (p *proc) changeStatuses() (map[string]string, tools.WorkspaceChangesResult) {
	p.t.Helper()
	res := p.call("workspace_changes", nil)
	if res.IsError {
		p.t.Fatal(textOf(res))
	}
	var changes tools.WorkspaceChangesResult
	decodeStructured(p.t, res, &changes)
	got := map[string]string{}
	for _, c := range changes.Changes {
		got[c.Path] = c.Status
	}
	return got, changes
}

// hostManifest describes every entry under dir without following links:
// type, permission bits, owner and a hash of the content or link target.
func hostManifest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var data []byte
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			data = []byte(target)
		case info.Mode().IsRegular():
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		sum := sha256.Sum256(data)
		out[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:8]) + " " + ownerOf(info)
		return nil
	}))
	return out
}

// treeOf describes the files and links under dir as git sees them:
// "file 644 <sha>" or "link <target>".
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = gitEntry(info.Mode(), data)
		}
		return nil
	}))
	return out
}

func gitEntry(mode fs.FileMode, data []byte) string {
	sum := sha256.Sum256(data)
	bits := "644"
	if mode&0o100 != 0 {
		bits = "755"
	}
	return "file " + bits + " " + hex.EncodeToString(sum[:8])
}

// containerTree is treeOf for a folder inside the session's container, read
// with tar through podman exec: the kernel's merged view, not ours.
func containerTree(t *testing.T, container, dir string) map[string]string {
	t.Helper()
	out, err := exec.Command("podman", "exec", container, "tar", "-cf", "-", "-C", dir, ".").Output()
	if err != nil {
		t.Fatalf("tar in the container: %v", err)
	}
	tree := map[string]string{}
	r := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return tree
		}
		must(t, err)
		name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		switch h.Typeflag {
		case tar.TypeSymlink:
			tree[name] = "link " + h.Linkname
		case tar.TypeReg:
			data, err := io.ReadAll(r)
			must(t, err)
			tree[name] = gitEntry(fs.FileMode(h.Mode), data)
		}
	}
}

func TestMountedFolderEditsStayInTheSessionAndExportAsAPatch(t *testing.T) {
	root, folder := project(t)
	docsRoot := t.TempDir()
	docs := filepath.Join(docsRoot, "docs")
	must(t, os.MkdirAll(docs, 0o755))
	must(t, os.WriteFile(filepath.Join(docs, "ref.txt"), []byte("reference\n"), 0o644))
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	must(t, os.WriteFile(secret, []byte(secretToken+"\n"), 0o644))
	before, docsBefore := hostManifest(t, folder), hostManifest(t, docs)
	exportDir := t.TempDir()

	p := start(t, startOptions{args: []string{"--mount", folder, "--mount", docs + ":ref:ro",
		"--allowed-root", root, "--allowed-root", docsRoot, "--export-on-exit", exportDir, "--keep-session-dirs"}})

	// The files are there, owned by the container user, who can edit them.
	ls := p.call("ls", map[string]any{"path": "proj/src"})
	if ls.IsError || !strings.Contains(textOf(ls), "main.go") {
		t.Fatalf("ls proj/src: %s", textOf(ls))
	}
	if id := p.run("id", "-u").Stdout; strings.TrimSpace(id) != "1000" {
		t.Errorf("the workspace runs as uid %q, want the folder's owner 1000", id)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"file_path": "proj/src/new.go", "content": "package main // new\n"}},
		{"edit_file", map[string]any{"file_path": "proj/README.md", "old_string": "some text", "new_string": "edited text"}},
		{"rm", map[string]any{"path": "proj/src/old.go"}},
		{"rm", map[string]any{"path": "proj/lib"}},
		{"write_file", map[string]any{"file_path": "scratch.txt", "content": "outside the mounts\n"}},
	} {
		if res := p.call(c.tool, c.args); res.IsError {
			t.Fatalf("%s %v: %s", c.tool, c.args, textOf(res))
		}
	}
	// The shell changes modes, binary content and links, and plants a
	// link at a host secret, hoping the host side follows it.
	script := "cd proj && chmod +x src/main.go && chmod -x run.sh && printf '\\001\\002\\000new' > data.bin && " +
		"rm link && ln -s src/main.go link && ln -s " + secret + " leak && mkdir -p empty/dir && mkdir -p docs && rm -r docs && mkdir docs && echo again > docs/guide2.txt"
	if res := p.run("sh", "-c", script); res.ExitCode != 0 {
		t.Fatalf("shell edits: %+v", res)
	}

	// A read-only mount refuses writes, naming the reason, and keeps the file.
	res := p.call("write_file", map[string]any{"file_path": "ref/ref.txt", "content": "overwritten"})
	if !res.IsError || !strings.Contains(textOf(res), "read-only") {
		t.Errorf("writing to a read-only mount: %v %s", res.IsError, textOf(res))
	}
	if out := p.run("cat", "ref/ref.txt").Stdout; out != "reference\n" {
		t.Errorf("ref/ref.txt after a refused write: %q", out)
	}

	// workspace_changes lists exactly what changed.
	got, changes := p.changeStatuses()
	want := map[string]string{
		"proj/src/new.go": "created", "proj/README.md": "modified", "proj/src/old.go": "deleted", "proj/lib/a/b.txt": "deleted",
		"proj/src/main.go": "modified", "proj/run.sh": "modified", "proj/data.bin": "modified", "proj/link": "modified",
		"proj/leak": "created", "proj/docs/guide.txt": "deleted", "proj/docs/guide2.txt": "created",
	}
	if !sameMap(got, want) {
		t.Errorf("workspace_changes:\n got %v\nwant %v", got, want)
	}
	if len(changes.Mounts) != 2 || changes.Mounts[1].Mode != "ro" {
		t.Errorf("mounts %+v", changes.Mounts)
	}

	// workspace_diff shows the same paths, the binary file by name only, and never the secret.
	diff := fullDiff(t, p)
	for path := range want {
		if !strings.Contains(diff, "b/"+path) && !strings.Contains(diff, "a/"+path) {
			t.Errorf("the diff does not mention %s", path)
		}
	}
	if !strings.Contains(diff, "Binary files a/proj/data.bin and b/proj/data.bin differ") || !strings.Contains(diff, "-some text\n+edited text\n") {
		t.Errorf("diff:\n%s", diff)
	}
	if strings.Contains(diff, secretToken) {
		t.Fatalf("the diff holds the host secret a planted link points at:\n%s", diff)
	}

	// The host folders have not changed at all, while the session sees its edits.
	final := containerTree(t, p.container(), "/workspace/proj")
	if after := hostManifest(t, folder); !sameMap(before, after) {
		t.Fatalf("the host folder changed:\nbefore %v\nafter  %v", before, after)
	}
	if after := hostManifest(t, docs); !sameMap(docsBefore, after) {
		t.Fatalf("the read-only folder changed")
	}

	// `wink-mcp export` of the running session, then the export on exit:
	// both apply to a clean copy and reproduce the session's tree exactly.
	cli := exec.Command(winkBin, "export", "--cache-dir", p.cache)
	var stderr bytes.Buffer
	cli.Stderr = &stderr
	patch, err := cli.Output()
	if err != nil {
		t.Fatalf("wink-mcp export: %v\n%s", err, stderr.String())
	}
	checkPatch(t, folder, patch, final)

	p.endSession()
	exported, _ := filepath.Glob(filepath.Join(exportDir, "*", "proj.patch"))
	if len(exported) != 1 {
		t.Fatalf("export on exit wrote %v, want one proj.patch", exported)
	}
	onExit, err := os.ReadFile(exported[0])
	must(t, err)
	if !bytes.Equal(onExit, patch) {
		t.Errorf("the patch written on exit differs from `wink-mcp export`'s")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(exported[0]), "ref.patch")); err == nil {
		t.Error("a patch was written for the read-only mount")
	}
	if after := hostManifest(t, folder); !sameMap(before, after) {
		t.Fatalf("the host folder changed after the session ended")
	}
}

// checkPatch applies patch with git apply to a copy of folder and compares
// the result with the session's final tree.
func checkPatch(t *testing.T, folder string, patch []byte, final map[string]string) {
	t.Helper()
	if bytes.Contains(patch, []byte(secretToken)) {
		t.Fatalf("the patch holds the host secret")
	}
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", folder+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	apply := exec.Command("git", "apply", "-")
	apply.Dir, apply.Stdin = dst, bytes.NewReader(patch)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, patch)
	}
	if got := treeOf(t, dst); !sameMap(got, final) {
		t.Fatalf("the patched copy differs from the session's tree:\npatched %v\nsession %v", got, final)
	}
}

// fullDiff reads workspace_diff page by page.
func fullDiff(t *testing.T, p *proc) string {
	t.Helper()
	var b strings.Builder
	for offset := 0; ; {
		res := p.call("workspace_diff", map[string]any{"offset": offset, "limit": 40})
		if res.IsError {
			t.Fatal(textOf(res))
		}
		var page tools.WorkspaceDiffResult
		decodeStructured(t, res, &page)
		b.WriteString(page.Diff)
		offset += page.Limit
		if page.Limit == 0 || offset >= page.TotalLines {
			return b.String()
		}
	}
}

func TestMountsOutsideTheAllowedRootsAreRefusedAtStart(t *testing.T) {
	root, folder := project(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"outside", []string{"--mount", "/etc", "--allowed-root", root}, "/etc is outside the allowed roots"},
		{"no root", []string{"--mount", folder}, "--allowed-root"},
		{"root-owned", []string{"--mount", t.TempDir(), "--allowed-root", "/tmp"}, "owned by root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(winkBin, append([]string{"--cache-dir", t.TempDir(), "--podman-url", "unix://" + podmanSocket}, tc.args...)...)
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("wink-mcp %v: %v\n%s", tc.args, err, out)
			}
		})
	}
}

// ownerOf is an entry's owner and modification time: a host folder that
// did not change keeps both.
func ownerOf(info fs.FileInfo) string {
	st := info.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d %d", st.Uid, st.Gid, info.ModTime().UnixNano())
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package changes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// manifest describes every file and symlink under dir, never following a
// link: "file 755 <sha256>" or "link <target>".
func manifest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			exec := "644"
			if info.Mode()&0o100 != 0 {
				exec = "755"
			}
			out[rel] = "file " + exec + " " + hex.EncodeToString(sum[:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// build makes files under dir: "name" → content; a content starting with
// "->" makes a symlink; a name ending in "*" makes the file executable.
func build(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies src to dst with cp -a.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
}

// applyPatch applies patch with git apply in a copy of base and returns the copy.
func applyPatch(t *testing.T, base string, patch []byte) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to check that patches apply: install git")
	}
	dst := t.TempDir()
	copyTree(t, base, dst)
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir, cmd.Stdin = dst, bytes.NewReader(patch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, patch)
	}
	return dst
}

func patchOf(t *testing.T, f *Folder, changes []Change, opts PatchOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := f.WritePatch(t.Context(), &buf, changes, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var exportOptions = PatchOptions{TextLimit: 1 << 20, Binary: true}

// baseFiles is the folder every test starts from.
var baseFiles = map[string]string{
	"README.md":          "# project\n\nline\n",
	"src/main.go":        "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	"src/util/a.go":      "package util\n",
	"src/util/b.go":      "package util // b\n",
	"run.sh*":            "#!/bin/sh\necho run\n",
	"no-newline.txt":     "first\nlast",
	"crlf.txt":           "one\r\ntwo\r\n",
	"image.bin":          "\x00\x01\x02binary\x00",
	"link":               "->README.md",
	"dir-to-file/x.txt":  "x\n",
	"file-to-dir":        "was a file\n",
	"file-to-link":       "was a file\n",
	"spaced name.txt":    "spaces\n",
	"docs/keep.txt":      "unchanged\n",
	"docs/mode-only.txt": "same content\n",
}

// edit turns a copy of the base files into the session's version.
func edit(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "README.md"), []byte("# project\n\nchanged line\nadded\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "no-newline.txt"), []byte("first\nlast\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "crlf.txt"), []byte("one\r\n2\r\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "image.bin"), []byte("\x00\x09binary changed\x00\xff"), 0o644))
	must(os.RemoveAll(filepath.Join(dir, "src/util")))
	must(os.Chmod(filepath.Join(dir, "run.sh"), 0o644))
	must(os.Chmod(filepath.Join(dir, "docs/mode-only.txt"), 0o755))
	must(os.Remove(filepath.Join(dir, "link")))
	must(os.Symlink("src/main.go", filepath.Join(dir, "link")))
	must(os.RemoveAll(filepath.Join(dir, "dir-to-file")))
	must(os.WriteFile(filepath.Join(dir, "dir-to-file"), []byte("now a file\n"), 0o644))
	must(os.Remove(filepath.Join(dir, "file-to-dir")))
	must(os.MkdirAll(filepath.Join(dir, "file-to-dir"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "file-to-dir/inside.txt"), []byte("inside\n"), 0o644))
	must(os.Remove(filepath.Join(dir, "file-to-link")))
	must(os.Symlink("README.md", filepath.Join(dir, "file-to-link")))
	must(os.Remove(filepath.Join(dir, "spaced name.txt")))
	build(t, dir, map[string]string{
		"new/empty.txt":       "",
		"new/tool*":           "#!/bin/sh\n",
		"new/blob.bin":        string(bytes.Repeat([]byte{0, 1, 2, 3, 250}, 3000)),
		"new/odd\tname\".txt": "quoted\n",
		"new/caf\xc3\xa9.txt": "non-ascii name\n",
		"new/latin1.txt":      "caf\xe9\n",
		"new/dangling":        "->/nonexistent/target",
	})
}

// editedCopy makes the base files, a copy of them edited by edit, and
// the Folder comparing the two, with its changes.
func editedCopy(t *testing.T) (base, current string, f *Folder, changes []Change) {
	t.Helper()
	base, ws := t.TempDir(), t.TempDir()
	build(t, base, baseFiles)
	current = filepath.Join(ws, "proj")
	must(t, os.Mkdir(current, 0o755))
	copyTree(t, base, current)
	edit(t, current)
	f, changes = openCopy(t, base, ws)
	return base, current, f, changes
}

// openCopy opens the copy at proj under ws against base, and lists its changes.
func openCopy(t *testing.T, base, ws string) (*Folder, []Change) {
	t.Helper()
	f, err := OpenCopy(base, ws, "proj")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	changes, err := f.Changes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return f, changes
}

func TestCopyFolderPatchReproducesTheSessionTree(t *testing.T) {
	base, current, f, changes := editedCopy(t)
	got := map[string]Status{}
	for _, c := range changes {
		got[c.Path] = c.Status()
	}
	want := map[string]Status{
		"README.md": Modified, "no-newline.txt": Modified, "crlf.txt": Modified, "image.bin": Modified,
		"src/util/a.go": Deleted, "src/util/b.go": Deleted, "run.sh": Modified, "docs/mode-only.txt": Modified,
		"link": Modified, "dir-to-file/x.txt": Deleted, "dir-to-file": Created, "file-to-dir": Deleted,
		"file-to-dir/inside.txt": Created, "file-to-link": Modified, "spaced name.txt": Deleted,
		"new/empty.txt": Created, "new/tool": Created, "new/blob.bin": Created, "new/odd\tname\".txt": Created,
		"new/caf\xc3\xa9.txt": Created, "new/latin1.txt": Created, "new/dangling": Created,
	}
	for p, s := range want {
		if got[p] != s {
			t.Errorf("%q: status %q, want %q", p, got[p], s)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%q reported as %s, but it did not change", p, got[p])
		}
	}

	patch := patchOf(t, f, changes, exportOptions)
	applied := applyPatch(t, base, patch)
	if a, b := manifest(t, applied), manifest(t, current); !mapsEqual(a, b) {
		t.Fatalf("the patched copy differs from the session's tree:\npatched: %v\nsession: %v\npatch:\n%s", a, b, patch)
	}
}

func TestDiffListsBinaryChangesWithoutTheirBytes(t *testing.T) {
	_, _, f, changes := editedCopy(t)
	diff := string(patchOf(t, f, changes, PatchOptions{TextLimit: 1 << 20}))
	for _, want := range []string{
		"Binary files a/image.bin and b/image.bin differ\n",
		"Binary files /dev/null and b/new/blob.bin differ\n",
		// Not valid UTF-8: binary in a diff meant for reading.
		"Binary files /dev/null and b/new/latin1.txt differ\n",
		"-line\n+changed line\n+added\n",
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "GIT binary patch") || !isUTF8(diff) {
		t.Errorf("a diff for reading holds binary data:\n%s", diff)
	}
}

func TestSymlinksPlantedByTheSessionAreNeverFollowed(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	must(t, os.WriteFile(secret, []byte("TOKEN-7f3a9c\n"), 0o600))
	base, ws := t.TempDir(), t.TempDir()
	build(t, base, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	current := filepath.Join(ws, "proj")
	must(t, os.Mkdir(current, 0o755))
	copyTree(t, base, current)
	// Links to the secret: absolute, relative climbing out, and one replacing a file.
	rel, _ := filepath.Rel(current, secret)
	build(t, current, map[string]string{"abs": "->" + secret, "climb": "->" + rel, "sub/deep": "->../../../../../../../../" + strings.TrimPrefix(secret, "/")})
	must(t, os.Remove(filepath.Join(current, "a.txt")))
	must(t, os.Symlink(secret, filepath.Join(current, "a.txt")))
	// A directory link out of the folder.
	must(t, os.Symlink(secretDir, filepath.Join(current, "dirlink")))

	f, changes := openCopy(t, base, ws)
	for _, opts := range []PatchOptions{exportOptions, {TextLimit: 1 << 20}} {
		patch := patchOf(t, f, changes, opts)
		if bytes.Contains(patch, []byte("TOKEN-7f3a9c")) {
			t.Fatalf("the patch holds the content of a file a planted link points at:\n%s", patch)
		}
		if !bytes.Contains(patch, []byte("new file mode 120000")) {
			t.Errorf("the links are not in the patch as links:\n%s", patch)
		}
	}
	applied := applyPatch(t, base, patchOf(t, f, changes, exportOptions))
	if a, b := manifest(t, applied), manifest(t, current); !mapsEqual(a, b) {
		t.Fatalf("patched copy %v, session %v", a, b)
	}
}

func TestTheFolderItselfReplacedByALinkIsRefused(t *testing.T) {
	base, ws := t.TempDir(), t.TempDir()
	build(t, base, map[string]string{"a.txt": "a\n"})
	must(t, os.Symlink(base, filepath.Join(ws, "proj")))
	if _, err := OpenCopy(base, ws, "proj"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("OpenCopy through a link: %v, want a refusal naming the symlink", err)
	}
}

func TestDeletedFolderIsEveryFileDeleted(t *testing.T) {
	base, ws := t.TempDir(), t.TempDir()
	build(t, base, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	_, changes := openCopy(t, base, ws)
	if len(changes) != 2 || changes[0].Status() != Deleted || changes[1].Status() != Deleted {
		t.Fatalf("changes %+v, want two deletions", changes)
	}
}

func TestQuotePathMatchesGit(t *testing.T) {
	for in, want := range map[string]string{
		"a/plain.txt":        "a/plain.txt",
		"a/with space":       "a/with space",
		"a/tab\there":        `"a/tab\there"`,
		`a/q"uote`:           `"a/q\"uote"`,
		`a/back\slash`:       `"a/back\\slash"`,
		"a/caf\xc3\xa9":      `"a/caf\303\251"`,
		"a/nl\nx":            `"a/nl\nx"`,
		"a/bell\x07\x01\x7f": `"a/bell\a\001\177"`,
	} {
		if got := quotePath(in); got != want {
			t.Errorf("quotePath(%q) = %s, want %s", in, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func isUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

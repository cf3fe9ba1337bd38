package changes

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ignoreFiles are .gitignore files with the rules git users write, and the
// corners of gitignore(5).
var ignoreFiles = map[string]string{
	".gitignore": "# comment\n__pycache__/\n*.py[co]\n/build\nnode_modules\n*.log\n!keep.log\ndocs/**/*.tmp\n**/gen/out\n" +
		"trail   \n\\#hash\n\\!bang\nspace\\ \n[!a]x.bin\nlib/\n!lib/\n",
	"sub/.gitignore":      "!*.log\nlocal.txt\n/anchored.txt\nonly/\n",
	"sub/deep/.gitignore": "*\n!*.keep\n!*/\n",
	".git/info/exclude":   "secret.env\n",
}

// ignoreProbes are paths a session might create.
var ignoreProbes = []string{
	"a.pyc", "src/a.pyo", "src/a.py", "__pycache__/x.cpython-312.pyc", "src/__pycache__/y.pyc",
	"build", "build/x.o", "src/build/x.o", "node_modules/a/index.js", "x/node_modules", "debug.log", "keep.log",
	"sub/debug.log", "sub/local.txt", "sub/x/local.txt", "sub/anchored.txt", "sub/x/anchored.txt", "sub/only/f", "sub/only",
	"docs/a.tmp", "docs/x/y/a.tmp", "a.tmp", "gen/out", "x/gen/out", "x/gen/out2", "trail", "#hash", "!bang", "space ",
	"bx.bin", "ax.bin", "lib/f.c", "sub/deep/f", "sub/deep/f.keep", "sub/deep/d/g.keep", "secret.env", "x/secret.env", "README.md",
}

// TestIgnoreRulesAgreeWithGit checks every probe against `git check-ignore`.
func TestIgnoreRulesAgreeWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is needed to check the ignore rules")
		}
		t.Skip("no git")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for name, content := range ignoreFiles {
		writeFile(t, filepath.Join(dir, name), content)
	}
	cmd := exec.Command("git", "-C", dir, "check-ignore", "--no-index", "--stdin")
	cmd.Stdin = strings.NewReader(strings.Join(ignoreProbes, "\n") + "\n")
	out, _ := cmd.Output() // exit 1 when none is ignored
	wantIgnored := strings.Split(strings.TrimSpace(string(out)), "\n")
	base, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer base.close()
	rules := newIgnoreRules(base)
	for _, probe := range ignoreProbes {
		want := slices.Contains(wantIgnored, probe)
		by := rules.ignoredBy(probe, false)
		if (by != "") != want {
			t.Errorf("%q: ignored by %q, git says ignored=%v", probe, by, want)
		}
	}
}

// TestPatchLeavesOutNewIgnoredFiles: new files the folder ignores are named,
// not patched; changes to files the folder has are patched even when
// ignored (git may track them); a .gitignore the session writes hides
// nothing; IncludeIgnored puts them all in.
func TestPatchLeavesOutNewIgnoredFiles(t *testing.T) {
	host, upper := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(host, ".gitignore"), "*.pyc\n")
	writeFile(t, filepath.Join(host, "tracked.pyc"), "old")
	writeFile(t, filepath.Join(upper, "tracked.pyc"), "new")
	writeFile(t, filepath.Join(upper, "src/__pycache__/m.pyc"), "bytecode")
	writeFile(t, filepath.Join(upper, ".gitignore"), "*.pyc\nsecret.py\n")
	writeFile(t, filepath.Join(upper, "secret.py"), "print(1)\n")
	for _, include := range []bool{false, true} {
		f, err := OpenOverlay(host, upper, KernelMarkers)
		if err != nil {
			t.Fatal(err)
		}
		f.IncludeIgnored = include
		list, err := f.Changes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var patch bytes.Buffer
		left, err := f.WritePatch(context.Background(), &patch, list, PatchOptions{TextLimit: 1 << 20, Binary: true})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tracked.pyc", "secret.py", ".gitignore"} {
			if !strings.Contains(patch.String(), "diff --git a/"+name) {
				t.Errorf("include=%v: %s is not in the patch:\n%s", include, name, patch.String())
			}
		}
		inPatch := strings.Contains(patch.String(), "diff --git a/src/__pycache__/m.pyc")
		if inPatch != include || (len(left) == 1) == include {
			t.Errorf("include=%v: m.pyc in the patch: %v; left out: %q", include, inPatch, left)
		}
		if !include && !strings.Contains(left[0], ".gitignore:1: *.pyc") {
			t.Errorf("the left-out line does not name the rule: %q", left[0])
		}
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

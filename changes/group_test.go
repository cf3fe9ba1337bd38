package changes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// npmSession makes, in dir (the session's view of a folder holding
// hostFiles), what an npm install, a build and an edit leave: a
// node_modules tree of 50 packages (500 files and a symlink), log files
// the folder ignores, a new app with its own node_modules, a new .git, and
// three real changes. With rename it also moves a host directory into
// node_modules, which a redirecting overlay records as a redirect.
func npmSession(t *testing.T, dir string, rename bool) {
	t.Helper()
	files := map[string]string{
		"src/index.js": "console.log(2)\n", "src/new.js": "export {}\n", "app/main.js": "main\n",
		"app/node_modules/x/y.js": "y\n", "src/a.log": "a\n", "src/b.log": "bb\n", "top.log": "t\n", ".git/HEAD": "ref: refs/heads/main\n",
		"node_modules/.bin/tool": "->../pkg0/lib/f0.js",
	}
	for p := range 50 {
		for f := range 10 {
			files[fmt.Sprintf("node_modules/pkg%d/lib/f%d.js", p, f)] = "x\n"
		}
	}
	build(t, dir, files)
	if rename {
		must(t, os.Rename(filepath.Join(dir, "vendor-old"), filepath.Join(dir, "node_modules", "moved")))
	}
}

var npmHost = map[string]string{".gitignore": "node_modules/\n*.log\n", "src/index.js": "console.log(1)\n", "vendor-old/a.js": "a\n", "vendor-old/b.js": "b\n"}

// TestIgnoredPathsAreGroupedAndCounted: whatever the folder's reader (a
// real kernel overlay, with and without redirected directories, or a
// copy), every path a patch leaves out in bulk is one counted group after
// the real changes, the patch holds the real changes first and one comment
// line per group, and it applies; with IncludeIgnored the ignored files are
// patched.
func TestIgnoredPathsAreGroupedAndCounted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rename  bool
		options []string
		copy    bool
	}{
		{name: "kernel overlay"},
		{name: "kernel overlay with a redirected directory", rename: true, options: []string{"redirect_dir=on"}},
		{name: "copy", rename: true, copy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lower, upper, ws := t.TempDir(), t.TempDir(), t.TempDir()
			build(t, lower, npmHost)
			var open func() (*Folder, error)
			session := filepath.Join(ws, "proj")
			if tc.copy {
				copyTree(t, lower, session)
				npmSession(t, session, tc.rename)
				open = func() (*Folder, error) { return OpenCopy(lower, ws, "proj") }
			} else {
				merged := mountOverlay(t, lower, upper, tc.options...)
				npmSession(t, merged, tc.rename)
				copyTree(t, merged, session)
				open = func() (*Folder, error) { return OpenOverlay(lower, upper, KernelMarkers) }
			}
			moved := 0
			var real []string
			if tc.rename {
				moved = 2
				real = append(real, "vendor-old/a.js deleted", "vendor-old/b.js deleted")
			}
			f, err := open()
			must(t, err)
			defer f.Close()
			list, err := f.Changes(t.Context())
			must(t, err)
			var got []string
			groups := map[string]string{}
			for i, c := range list {
				if c.Group == nil {
					got = append(got, c.Path+" "+string(c.Status()))
					if i > 0 && list[i-1].Group != nil {
						t.Errorf("the change %s comes after a group", c.Path)
					}
					continue
				}
				groups[c.Path] = fmt.Sprintf("%d %d %v %s", c.Group.Files, c.Group.Bytes, c.Group.NewDir, c.Ignored)
			}
			wantReal := append([]string{"app/main.js created", "src/index.js modified", "src/new.js created"}, real...)
			if strings.Join(got, ",") != strings.Join(wantReal, ",") {
				t.Errorf("real changes %q, want %q", got, wantReal)
			}
			wantGroups := map[string]string{
				".git":             "1 21 true ",
				"app/node_modules": "1 2 true .gitignore:1: node_modules/",
				"node_modules":     fmt.Sprintf("%d %d true .gitignore:1: node_modules/", 501+moved, 1000+len("../pkg0/lib/f0.js")+2*moved),
				"":                 "1 2 false .gitignore:2: *.log",
				"src":              "2 5 false .gitignore:2: *.log",
			}
			if !mapsEqual(groups, wantGroups) {
				t.Errorf("groups\n got %q\nwant %q", groups, wantGroups)
			}
			patch := patchOf(t, f, list, exportOptions)
			text := string(patch)
			if first, last := strings.Index(text, "# not in this patch"), strings.LastIndex(text, "diff --git"); first < last {
				t.Errorf("a left-out line comes before a change:\n%s", text)
			}
			if n := strings.Count(text, "# not in this patch"); n != len(wantGroups) {
				t.Errorf("%d left-out lines, want one per group (%d):\n%s", n, len(wantGroups), text)
			}
			for _, want := range []string{"node_modules/ (a new directory: " + fmt.Sprint(501+moved) + " files", "src/ (2 new files, 5 bytes)", "./ (1 new file, 2 bytes)"} {
				if !strings.Contains(text, want) {
					t.Errorf("the patch does not say %q:\n%s", want, text)
				}
			}
			applied := applyPatch(t, lower, patch)
			if strings.Contains(text, "pkg0") {
				t.Errorf("an ignored file is in the patch")
			}
			wantTree := manifest(t, session)
			for p := range wantTree {
				if strings.Contains(p, "node_modules") || strings.HasSuffix(p, ".log") || underGit(p) {
					delete(wantTree, p)
				}
			}
			if got := manifest(t, applied); !mapsEqual(got, wantTree) {
				t.Errorf("the patched copy\n got %v\nwant %v", sortedKeys(got), sortedKeys(wantTree))
			}

			f.IncludeIgnored = true
			all, err := f.Changes(t.Context())
			must(t, err)
			patch = patchOf(t, f, all, exportOptions)
			if n := strings.Count(string(patch), "# not in this patch"); n != 1 || !strings.Contains(string(patch), "diff --git a/node_modules/pkg49/lib/f9.js") {
				t.Errorf("with IncludeIgnored, %d left-out lines (want the .git one only) or node_modules missing", n)
			}
			if got := manifest(t, applyPatch(t, lower, patch)); len(got) != len(manifest(t, session))-1 {
				t.Errorf("with IncludeIgnored the patched copy has %d files, want the session's %d less .git/HEAD", len(got), len(manifest(t, session)))
			}
		})
	}
}

// TestGroupCountsStopAtTheirBudget: a count past its budget (directories
// spend it too) stops, says so, and the line calls its numbers lower bounds.
func TestGroupCountsStopAtTheirBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(dir string) tree
	}{
		{"directory descriptors", func(dir string) tree { d, err := openDir(dir); must(t, err); t.Cleanup(func() { d.close() }); return d }},
		{"lstat by lstat", func(dir string) tree { return fsTree{os.DirFS(dir)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			for i := range 250 {
				files[fmt.Sprintf("node_modules/p%d/f.js", i)] = "x"
			}
			build(t, dir, files)
			n := &counter{ctx: t.Context(), left: 100}
			g := &Group{NewDir: true}
			err := n.count(tc.open(dir), "node_modules", g)
			// Each package is a directory and a file: 100 entries are 50 files.
			if !errors.Is(err, errBudget) || !g.Capped || g.Files != 50 || g.Bytes != 50 {
				t.Fatalf("count past its budget: %v, %+v", err, g)
			}
			if line := g.describe(true); !strings.Contains(line, "at least 50 files") {
				t.Errorf("the line does not call the count a lower bound: %q", line)
			}
			n = &counter{ctx: t.Context(), left: MaxCounted}
			g = &Group{NewDir: true}
			if err := n.count(tc.open(dir), "node_modules", g); err != nil || g.Capped || g.Files != 250 {
				t.Errorf("count within its budget: %v, %+v", err, g)
			}
		})
	}
}

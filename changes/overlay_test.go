package changes

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// mountOverlay mounts a kernel overlay of lower with upper at a new
// directory, which it returns; the mount is undone at cleanup. It needs
// root, which CI has; elsewhere the test is skipped.
func mountOverlay(t *testing.T, lower, upper string, options ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root; -short (make unit) leaves it out")
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs the tests as root, so that real overlays check the overlay reader")
		}
		t.Skip("mounting an overlay needs root")
	}
	work, merged := t.TempDir(), t.TempDir()
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	for _, o := range options {
		opts += "," + o
	}
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mounting an overlay: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(merged, unix.MNT_DETACH) })
	return merged
}

func TestOverlayChangesMatchTheKernelsMergedView(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	build(t, lower, baseFiles)
	before := manifest(t, lower)
	merged := mountOverlay(t, lower, upper)
	edit(t, merged)
	// A directory emptied and refilled becomes opaque in the upper directory.
	must(t, os.RemoveAll(filepath.Join(merged, "docs")))
	build(t, merged, map[string]string{"docs/again.txt": "opaque\n"})
	// A file rewritten with the same bytes is copied up but is no change.
	must(t, os.WriteFile(filepath.Join(merged, "src/main.go"), []byte(baseFiles["src/main.go"]), 0o644))
	session := manifest(t, merged)
	ws := t.TempDir()
	must(t, os.Mkdir(filepath.Join(ws, "proj"), 0o755))
	copyTree(t, merged, filepath.Join(ws, "proj"))
	must(t, unix.Unmount(merged, 0))

	if after := manifest(t, lower); !mapsEqual(before, after) {
		t.Fatalf("the overlay changed its lower directory")
	}
	f, err := OpenOverlay(lower, upper, KernelMarkers)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rebuilt := treeManifest(t, f.current); !mapsEqual(rebuilt, session) {
		t.Fatalf("the merged view rebuilt from the upper directory differs from the kernel's:\nrebuilt: %v\nkernel:  %v", rebuilt, session)
	}
	changes, err := f.Changes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The same edits, compared file by file against a plain copy, are the reference.
	copied, err := OpenCopy(lower, ws, "proj")
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	reference, err := copied.Changes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(changes), describe(reference); !mapsEqual(got, want) {
		t.Fatalf("overlay changes differ from a file-by-file comparison:\noverlay: %v\ncompare: %v", got, want)
	}
	applied := applyPatch(t, lower, patchOf(t, f, changes, exportOptions))
	if got := manifest(t, applied); !mapsEqual(got, session) {
		t.Fatalf("the patched copy differs from the session's tree:\npatched: %v\nsession: %v", got, session)
	}
}

func TestFuseOverlayWhiteoutFiles(t *testing.T) {
	// fuse-overlayfs, when it cannot make whiteout devices, marks deletions
	// with ".wh." files and opaque directories with ".wh..wh..opq".
	lower, upper := t.TempDir(), t.TempDir()
	build(t, lower, map[string]string{"gone.txt": "g\n", "kept.txt": "k\n", "opaque/old.txt": "o\n"})
	build(t, upper, map[string]string{".wh.gone.txt": "", "opaque/.wh..wh..opq": "", "opaque/new.txt": "n\n"})
	f, err := OpenOverlay(lower, upper, FuseMarkers)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{"kept.txt": "k\n", "opaque/new.txt": "n\n"}
	got := treeManifest(t, f.current)
	if len(got) != len(want) {
		t.Fatalf("merged view %v, want only %v", got, sortedKeys(want))
	}
	changes, err := f.Changes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]Status{}
	for _, c := range changes {
		status[c.Path] = c.Status()
	}
	if status["gone.txt"] != Deleted || status["opaque/old.txt"] != Deleted || status["opaque/new.txt"] != Created || len(status) != 3 {
		t.Fatalf("changes %v", status)
	}
}

// TestNamesAndAttributesTheModelMakesAreData makes, through real kernel
// overlays (as root, and with userxattr as rootless Podman mounts them),
// every name and attribute an unprivileged sandbox user can that some
// overlay driver reads as metadata: ".wh." files and user.overlay.*
// attributes. The rebuilt view must be the kernel's, and the patch applied
// to a clean copy must give exactly the merged tree.
func TestNamesAndAttributesTheModelMakesAreData(t *testing.T) {
	for _, tc := range []struct {
		name    string
		markers Markers
		options []string
	}{
		{"rootful", KernelMarkers, nil},
		{"userxattr", UserxattrMarkers, []string{"userxattr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lower, upper := t.TempDir(), t.TempDir()
			build(t, lower, map[string]string{
				"README.md": "r\n", "keep/a.txt": "a\n", "keep/b.txt": "b\n", "dir/x.txt": "x\n", "meta.txt": "m\n",
			})
			merged := mountOverlay(t, lower, upper, tc.options...)
			build(t, merged, map[string]string{
				".wh.README.md": "not a whiteout\n", "keep/.wh..wh..opq": "not an opaque marker\n",
				".wh..wh..opq": "", ".wh.": "", ".wh..wh..plnk": "", "dir/.wh.x.txt": "", "dir/.wh.missing": "",
				"new/.wh..wh..opq": "",
			})
			// Attributes the sandbox user may set on its own files (user.*):
			// kernel overlays refuse user.overlay.* through a userxattr mount.
			for _, set := range []struct{ path, attr, value string }{
				{"keep", "user.overlay.opaque", "y"},
				{"dir", "user.overlay.redirect", "/keep"},
				{"meta.txt", "user.overlay.metacopy", ""},
				{"new", "user.overlay.opaque", "y"},
				{"dir/x.txt", "user.overlay.redirect", "/README.md"},
			} {
				err := unix.Setxattr(filepath.Join(merged, set.path), set.attr, []byte(set.value), 0)
				if err != nil && tc.markers == KernelMarkers {
					t.Fatalf("setting %s on %s: %v", set.attr, set.path, err)
				}
			}
			session := manifest(t, merged)
			must(t, unix.Unmount(merged, 0))
			f, err := OpenOverlay(lower, upper, tc.markers)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if rebuilt := treeManifest(t, f.current); !mapsEqual(rebuilt, session) {
				t.Fatalf("the rebuilt view differs from the kernel's:\nrebuilt: %v\nkernel:  %v", rebuilt, session)
			}
			list, err := f.Changes(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range list {
				if c.Status() == Deleted {
					t.Errorf("%s reported deleted; the container still has it", c.Path)
				}
			}
			applied := applyPatch(t, lower, patchOf(t, f, list, exportOptions))
			if got := manifest(t, applied); !mapsEqual(got, session) {
				t.Fatalf("the patched copy differs from the container's tree:\npatched: %v\nsession: %v", got, session)
			}
		})
	}
}

// describe maps each change's path to its status and entries.
func describe(changes []Change) map[string]string {
	out := map[string]string{}
	for _, c := range changes {
		s := string(c.Status())
		for _, e := range []*Entry{c.Old, c.New} {
			if e != nil {
				s += fmt.Sprintf(" %s:%s:%d", e.Kind, e.gitMode(), e.Size)
			}
		}
		out[c.Path] += s
	}
	return out
}

// treeManifest is manifest over a tree, for comparing a rebuilt view with a real one.
func treeManifest(t *testing.T, tr tree) map[string]string {
	t.Helper()
	dir := t.TempDir()
	var copyOut func(rel string)
	copyOut = func(rel string) {
		names, err := tr.names(rel)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			p := join(rel, n)
			info, err := tr.lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(dir, p)
			switch {
			case info.IsDir():
				must(t, os.Mkdir(dst, 0o755))
				copyOut(p)
			case info.Mode()&os.ModeSymlink != 0:
				target, err := tr.readlink(p)
				must(t, err)
				must(t, os.Symlink(target, dst))
			case info.Mode().IsRegular():
				data, err := content(tr, p, info, 1<<30)
				must(t, err)
				must(t, os.WriteFile(dst, data, info.Mode().Perm()))
				must(t, os.Chmod(dst, info.Mode().Perm()))
			}
		}
	}
	copyOut("")
	return manifest(t, dir)
}

package mounts

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tarOf builds an archive of the given headers, each regular file holding
// its Size in x bytes.
func tarOf(t *testing.T, headers ...*tar.Header) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, h := range headers {
		if h.Typeflag == tar.TypeReg {
			h.Mode = 0o644
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			w.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	w.Close()
	return &b
}

// What comes back from the Podman host is the session's, so hostile: every
// name stays under the directory it is unpacked in, links are never
// followed out of it, devices are not made, and a copy over the limit stops.
func TestExtractTarConfinesHostileArchives(t *testing.T) {
	outside := t.TempDir()
	for name, archive := range map[string]*bytes.Buffer{
		"a name climbing out": tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: "../../" + filepath.Base(outside) + "/escaped", Size: 1}),
		"a file through a link": tarOf(t,
			&tar.Header{Typeflag: tar.TypeSymlink, Name: "proj/l", Linkname: outside},
			&tar.Header{Typeflag: tar.TypeReg, Name: "proj/l/escaped", Size: 1}),
		"a device": tarOf(t, &tar.Header{Typeflag: tar.TypeChar, Name: "proj/null", Devmajor: 1, Devminor: 3}),
	} {
		dir := t.TempDir()
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		_ = ExtractTar(archive, root, 1<<20)
		root.Close()
		if _, err := os.Lstat(filepath.Join(outside, "escaped")); err == nil {
			t.Fatalf("%s: a file was written outside", name)
		}
		if _, err := os.Lstat(filepath.Join(dir, "proj", "null")); err == nil {
			t.Errorf("%s: a device was made", name)
		}
	}
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	big := tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: "proj/a", Size: 600}, &tar.Header{Typeflag: tar.TypeReg, Name: "proj/b", Size: 600})
	if err := ExtractTar(big, root, 1000); err == nil || !strings.Contains(err.Error(), "more than 1000 B") {
		t.Errorf("a copy over the limit: %v", err)
	}
}

//go:build linux

package forkcopy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Image copies a mounted ext4 filesystem while a writer replaces a file by
// rename as fast as it can: every copy checks clean (e2fsck) and holds the
// file whole, one version of it, and the source goes on being written
// after the copy. It needs root, to loop-mount.
func TestImageIsOneInstantOfAMountedFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop-mounting needs root")
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "umount", "e2fsck"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	image, mnt := filepath.Join(dir, "src.img"), filepath.Join(dir, "mnt")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(mnt, 0o700))
	must(os.WriteFile(image, nil, 0o600))
	must(os.Truncate(image, 64<<20))
	run("mkfs.ext4", "-q", "-F", "-m", "0", image)
	run("mount", "-o", "loop", image, mnt)
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })

	ctx, stop := context.WithCancel(context.Background())
	var writes atomic.Int64
	done := make(chan error, 1)
	go func() { // a command replacing a 1 MiB file by rename, in a loop
		for i := 0; ctx.Err() == nil; i++ {
			tmp := filepath.Join(mnt, "f.tmp")
			if err := os.WriteFile(tmp, bytes.Repeat([]byte{byte('a' + i%26)}, 1<<20), 0o644); err != nil {
				done <- err
				return
			}
			if err := os.Rename(tmp, filepath.Join(mnt, "f")); err != nil {
				done <- err
				return
			}
			writes.Add(1)
		}
		done <- nil
	}()
	time.Sleep(100 * time.Millisecond)
	copies := []string{filepath.Join(dir, "c1.img"), filepath.Join(dir, "c2.img")}
	must(Image(image, mnt, copies))
	before := writes.Load()
	time.Sleep(100 * time.Millisecond)
	stop()
	must(<-done)
	if writes.Load() == before {
		t.Error("the source was not written after the copy: it stayed frozen")
	}
	for i, c := range copies {
		run("e2fsck", "-fn", c)
		cm := filepath.Join(dir, fmt.Sprintf("m%d", i))
		must(os.Mkdir(cm, 0o700))
		run("mount", "-o", "loop,ro", c, cm)
		data, err := os.ReadFile(filepath.Join(cm, "f"))
		run("umount", cm)
		must(err)
		if len(data) != 1<<20 || !bytes.Equal(data, bytes.Repeat(data[:1], 1<<20)) {
			t.Errorf("copy %d holds f of %d bytes, not one whole version", i+1, len(data))
		}
	}
}

// Reflinks tells a filesystem that shares a copy's blocks (XFS made with
// reflink=1) from one that does not (ext4), and leaves nothing behind.
func TestReflinksTellsTheFilesystems(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop-mounting needs root")
	}
	for fs, want := range map[string]bool{"ext4": false, "xfs": true} {
		mkfs := "mkfs." + fs
		if _, err := exec.LookPath(mkfs); err != nil {
			t.Logf("%s is not installed: %s not tried", mkfs, fs)
			continue
		}
		dir := t.TempDir()
		image, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
		if err := os.Mkdir(mnt, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(image, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(image, 320<<20); err != nil {
			t.Fatal(err)
		}
		var args []string
		if fs == "xfs" {
			args = []string{"-q", "-m", "reflink=1", image}
		} else {
			args = []string{"-q", "-F", image}
		}
		if out, err := exec.Command(mkfs, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", mkfs, err, out)
		}
		if out, err := exec.Command("mount", "-o", "loop", image, mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount: %v\n%s", err, out)
		}
		got, err := Reflinks(mnt)
		entries, _ := os.ReadDir(mnt)
		_ = exec.Command("umount", mnt).Run()
		if err != nil || got != want {
			t.Errorf("%s: Reflinks = %v, %v; want %v", fs, got, err, want)
		}
		for _, e := range entries {
			if e.Name() != "lost+found" {
				t.Errorf("%s: the probe left %s", fs, e.Name())
			}
		}
	}
}

// A process of the container swapping a directory of its workspace for a
// symlink to a host directory, as fast as it can, while the tree is
// copied again and again, never gets a host file into a copy.
func TestTreeNeverFollowsASwappedLink(t *testing.T) {
	base := t.TempDir()
	secret, src := filepath.Join(base, "host"), filepath.Join(base, "src")
	for _, d := range []string{secret, filepath.Join(src, "d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(secret, "f"), []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "d", "f"), []byte("workspace"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	swapped := make(chan struct{})
	defer func() { stop(); <-swapped }() // before the temporary directory goes
	// d is a directory, then a link to the host's, then a directory again.
	go func() {
		defer close(swapped)
		d, real, aside := filepath.Join(src, "d"), filepath.Join(src, "real"), filepath.Join(src, "link")
		_ = os.Rename(d, real)
		_ = os.Symlink(secret, aside)
		for ctx.Err() == nil {
			_ = os.Rename(aside, d) // d is now the link
			_ = os.Rename(d, aside)
			_ = os.Rename(real, d) // d is the directory
			_ = os.Rename(d, real)
		}
	}()
	for i := range 300 {
		dst := filepath.Join(base, fmt.Sprintf("copy%d", i))
		_ = Tree(src, dst) // an entry renamed away mid-copy may fail it; nothing may leak
		err := filepath.Walk(dst, func(path string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				if data, _ := os.ReadFile(path); bytes.Contains(data, []byte("secret")) {
					t.Fatalf("copy %d holds the host's file at %s", i, path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(dst)
	}
}

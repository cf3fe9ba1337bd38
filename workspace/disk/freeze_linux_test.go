package disk

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestUnmountUnderThawsAFrozenDisk: a session disk a killed server left
// frozen (between Freeze and its thaw) holds its container's writers in
// an uninterruptible wait; the sweep's UnmountUnder thaws it, so the
// writer finishes and its container can go. It needs root, to loop-mount.
func TestUnmountUnderThawsAFrozenDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop-mounting needs root")
	}
	for _, tool := range []string{"mkfs.ext4", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root := t.TempDir()
	image, mnt := filepath.Join(root, "disk.img"), filepath.Join(root, "sessions", "s1")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, 32<<20); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"mkfs.ext4", "-q", "-F", "-m", "0", image}, {"mount", "-o", "loop", image, mnt}} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, out)
		}
	}
	t.Cleanup(func() { _ = Unmount(mnt) })
	f, err := os.Create(filepath.Join(mnt, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	thaw, err := Freeze(mnt)
	if err != nil {
		t.Fatal(err)
	}
	// The server "dies" here: thaw is never called by it (only by this
	// test's clean-up, should the sweep not thaw, so no writer is left).
	t.Cleanup(func() { _ = thaw() })
	wrote := make(chan error, 1)
	go func() {
		_, err := f.Write([]byte("after the freeze\n"))
		if err == nil {
			err = f.Sync()
		}
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a write to the frozen disk did not wait: %v", err)
	case <-time.After(200 * time.Millisecond):
	}

	if err := UnmountUnder(filepath.Join(root, "sessions")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("the writer, once thawed: %v", err)
		}
	case <-time.After(30 * time.Second): // a hang, not a speed: a thawed write takes milliseconds
		t.Fatal("the writer still waits after UnmountUnder: the disk was left frozen")
	}
}

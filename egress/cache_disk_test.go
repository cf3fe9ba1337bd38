package egress

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// tmpfsEnv names the 4 MiB tmpfs the test runs its cache on, in the mount
// namespace its parent made.
const tmpfsEnv = "WINK_TEST_CACHE_TMPFS"

// On a filesystem that really fills up (a 4 MiB tmpfs, in a user and mount
// namespace of the test's own), an artefact that does not fit still
// reaches its client whole and is not kept, new entries wait, and the
// entries kept are served.
func TestCacheOnARealFullDisk(t *testing.T) {
	dir := os.Getenv(tmpfsEnv)
	if dir == "" {
		dir = t.TempDir()
		cmd := exec.Command("unshare", "-rm", "sh", "-c", `mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"`,
			dir, os.Args[0], "-test.run=^TestCacheOnARealFullDisk$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), tmpfsEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil && (strings.Contains(string(out), "unshare:") || strings.Contains(string(out), "mount:")) {
			msg := "no user and mount namespace with a tmpfs here: " + string(out)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestCacheOnARealFullDisk") {
			t.Fatalf("on the tmpfs: %v\n%s", err, out)
		}
		return
	}
	sizes := map[string]int{"/small/@v/v1.zip": 1 << 20, "/large/@v/v1.zip": 3<<20 + 512<<10, "/later/@v/v1.zip": 100 << 10}
	body := func(path string) []byte { return bytes.Repeat([]byte{byte(len(path))}, sizes[path]) }
	rig := newCacheRigIn(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(sizes[r.URL.Path]))
		w.Write(body(r.URL.Path))
	}, dir+"/cache")
	rig.get(t, 0, "/small/@v/v1.zip")
	rig.waitEntries(t, 1)
	if _, _, got := rig.get(t, 1, "/large/@v/v1.zip"); !bytes.Equal(got, body("/large/@v/v1.zip")) {
		t.Fatalf("the large artefact reached its client with %d bytes of %d", len(got), sizes["/large/@v/v1.zip"])
	}
	if _, how, got := rig.get(t, 1, "/later/@v/v1.zip"); how != "" || !bytes.Equal(got, body("/later/@v/v1.zip")) {
		t.Fatalf("a new artefact after ENOSPC: %q, %d bytes", how, len(got))
	}
	if _, how, got := rig.get(t, 0, "/small/@v/v1.zip"); how != "hit" || !bytes.Equal(got, body("/small/@v/v1.zip")) {
		t.Fatalf("the entry kept before the disk filled: %q", how)
	}
	if n := rig.entries(); n != 1 || rig.cache.Stats().Refused.Load() < 1 {
		t.Fatalf("%d entries, %d refused; want 1 and some", n, rig.cache.Stats().Refused.Load())
	}
	if files, _ := os.ReadDir(dir + "/cache/tmp"); len(files) != 0 {
		t.Errorf("the cut entry's temporary file is left: %v", files)
	}
}

package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An entry whose file was changed or cut on disk is removed and fetched
// again, never served.
func TestCacheRefetchesADamagedEntry(t *testing.T) {
	rig := newCacheRig(t, nil)
	rig.get(t, 0, zipPath)
	rig.waitEntries(t, 1)
	file := rig.cache.path(keyName("https://" + rig.host + zipPath))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[10] ^= 1 // same length, another byte
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, how, body := rig.get(t, 1, zipPath); how != "miss" || !bytes.Equal(body, artefactBody(zipPath)) {
		t.Fatalf("a changed entry: %s", how)
	}
	rig.waitEntries(t, 1)
	if err := os.Truncate(file, 100); err != nil {
		t.Fatal(err)
	}
	if _, how, body := rig.get(t, 1, zipPath); how != "miss" || !bytes.Equal(body, artefactBody(zipPath)) {
		t.Fatalf("a cut entry: %s", how)
	}
	rig.waitEntries(t, 1)
	if got := rig.cache.Stats().Damaged.Load(); got != 2 {
		t.Errorf("%d damaged, want 2", got)
	}
	if _, how, _ := rig.get(t, 0, zipPath); how != "hit" {
		t.Errorf("after fetching again: %s", how)
	}
	// A restart finds the entry again, and drops one whose file was cut.
	again, err := OpenCache(rig.cache.Dir(), MinCacheBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, n := again.Usage(); n != 1 {
		t.Fatalf("reopened: %d entries, want 1", n)
	}
	os.Truncate(file, 1)
	if again, err = OpenCache(rig.cache.Dir(), MinCacheBytes); err != nil {
		t.Fatal(err)
	}
	if _, n := again.Usage(); n != 0 {
		t.Fatalf("reopened with a cut file: %d entries, want 0", n)
	}
}

// fullDisk is a temporary file on a disk that has no room left.
type fullDisk struct{ name string }

func (f *fullDisk) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: f.name, Err: errNoSpace}
}
func (f *fullDisk) Name() string { return f.name }
func (f *fullDisk) Close() error { return nil }

// A full disk refuses new entries, and the download still reaches its
// client whole; entries already kept are served.
func TestCacheOnAFullDisk(t *testing.T) {
	rig := newCacheRig(t, nil)
	rig.get(t, 0, zipPath)
	rig.waitEntries(t, 1)
	rig.cache.create = func(dir string) (cacheFile, error) { return &fullDisk{name: filepath.Join(dir, "full")}, nil }
	other := "/example.com/other/@v/v1.0.0.zip"
	for i := range 2 {
		if _, _, body := rig.get(t, i, other); !bytes.Equal(body, artefactBody(other)) {
			t.Fatalf("on a full disk the client got %d bytes", len(body))
		}
	}
	if _, how, _ := rig.get(t, 1, zipPath); how != "hit" {
		t.Fatalf("a kept entry on a full disk: %q", how)
	}
	if n := rig.entries(); n != 1 || rig.cache.Stats().Refused.Load() < 1 {
		t.Fatalf("%d entries, %d refused", n, rig.cache.Stats().Refused.Load())
	}
}

// The cache stays within its bound, dropping the least recently used
// entries first, and never one being served.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c, err := OpenCache(t.TempDir(), MinCacheBytes)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string) {
		_, fill, err := c.acquire(context.Background(), key)
		if err != nil || fill == nil {
			t.Fatalf("%s: %v %v", key, fill, err)
		}
		w := c.writer(key, fill)
		w.Write(bytes.Repeat([]byte{1}, MinCacheBytes/4))
		if !w.commit(cacheMeta{}, MinCacheBytes/4) {
			t.Fatalf("%s not stored", key)
		}
	}
	put("a")
	put("b")
	held, _, _ := c.acquire(context.Background(), "a") // "a" is being served, and the least recently used
	if held == nil {
		t.Fatal("no a")
	}
	put("c")
	put("d")
	put("e")
	put("f")
	_, fill, _ := c.acquire(context.Background(), "a")
	if fill != nil {
		t.Fatal("the entry being served was evicted")
	}
	held.done()
	if size, n := c.Usage(); size > MinCacheBytes || n != 4 {
		t.Fatalf("size %d, %d entries", size, n)
	}
	if _, fill, _ := c.acquire(context.Background(), "b"); fill == nil {
		t.Fatal("b, least recently used and not served, was kept")
	} else {
		c.abort("b", fill)
	}
	put("g")
	if size, _ := c.Usage(); size > MinCacheBytes {
		t.Fatalf("size %d over the bound once nothing is served", size)
	}
	if c.Stats().Evictions.Load() < 3 {
		t.Errorf("%d evictions", c.Stats().Evictions.Load())
	}
}

func TestCacheChecksItsSize(t *testing.T) {
	if _, err := OpenCache(t.TempDir(), 1<<20); err == nil || !strings.Contains(err.Error(), "--egress-cache-size") {
		t.Fatalf("%v", err)
	}
}

var errNoSpace = syscall.ENOSPC

// A client that reads its download slowly, or not at all, holds the
// other requests for that artefact only until the download stalls; they
// then fetch it on their own, whole.
func TestCacheSlowClientHoldsNoOne(t *testing.T) {
	old := fillStall
	fillStall = 300 * time.Millisecond
	t.Cleanup(func() { fillStall = old })
	large := bytes.Repeat([]byte("s"), 48<<20) // far more than the sockets on the way hold
	rig := newCacheRig(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(large)))
		w.Write(large)
	})
	rig.cache.max = 256 << 20 // room for it
	stuck := rig.dialTLS(t, 0)
	fmt.Fprintf(stuck, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", zipPath, rig.host)
	for deadline := time.Now().Add(5 * time.Second); rig.upstreamSaw(zipPath) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stuck client's download never started")
		}
	}
	done := make(chan []byte)
	go func() {
		_, _, body := rig.get(t, 1, zipPath)
		done <- body
	}()
	select {
	case body := <-done:
		if !bytes.Equal(body, large) {
			t.Fatalf("the other session got %d bytes", len(body))
		}
	case <-time.After(8 * time.Second):
		t.Fatal("a client that does not read held another session's request")
	}
	if rig.upstreamSaw(zipPath) != 2 || rig.cache.Stats().Refused.Load() != 1 {
		t.Fatalf("upstream saw %d, refused %d", rig.upstreamSaw(zipPath), rig.cache.Stats().Refused.Load())
	}
}

// A TLS server name other than the CONNECT's host gets no certificate, so
// no request of that connection reaches the upstream or the cache.
func TestCacheRefusesAnotherServerName(t *testing.T) {
	rig := newCacheRig(t, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(rig.proxies[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", rig.host, rig.host)
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "other.example", InsecureSkipVerify: true})
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Fatal("the proxy completed a handshake for another server name")
	}
	if rig.upstreamSaw(zipPath) != 0 || rig.entries() != 0 {
		t.Fatal("a connection with another server name reached the upstream or the cache")
	}
}

package egress

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the artefact cache.
const (
	// DefaultCacheBytes is --egress-cache-size's default.
	DefaultCacheBytes = 2 << 30
	// MinCacheBytes is the smallest --egress-cache-size.
	MinCacheBytes = 16 << 20
	// CacheDirName is the directory of a cache directory that holds the
	// artefact cache unless --egress-cache-dir names another.
	CacheDirName = "egress-cache"
	// fullPause is how long a full disk (ENOSPC) stops new entries.
	fullPause = time.Minute
)

// Cache keeps immutable artefacts (Go modules, npm tarballs, .debs,
// wheels) that the proxy downloaded itself, for every session of the
// server. An entry is a file named by the SHA-256 of its key (see
// cacheKey) and a sidecar recording the key, length and SHA-256 of the
// content; it is written to a temporary file and renamed only once
// complete. It is safe for concurrent use: one download fills a key, the
// other requests for it wait for that one.
type Cache struct {
	dir string
	max int64

	mu      sync.Mutex
	entries map[string]*cacheEntry // by key
	lru     *list.List             // of *cacheEntry, least recently used first
	size    int64
	fills   map[string]*cacheFill
	fullAt  time.Time // the last ENOSPC; new entries wait fullPause after it

	// create makes the temporary file of a new entry (tests give a disk
	// that fills up).
	create func(dir string) (cacheFile, error)

	stats CacheStats
}

// CacheStats count what the cache did since the server started.
type CacheStats struct {
	// Hits are requests served from disk; Misses those fetched (kept or
	// not); Bypasses requests of a cached host the cache may not serve
	// (see cacheKey); Stored new entries; Evictions entries removed for
	// room; Damaged entries removed because their file was wrong; Refused
	// downloads not kept because the disk was full or another was slow.
	Hits, Misses, Bypasses, Stored, Evictions, Damaged, Refused atomic.Int64
	// HitBytes are the bytes served from the cache, StoredBytes those stored.
	HitBytes, StoredBytes atomic.Int64
}

// cacheFile is where a new entry is written.
type cacheFile interface {
	io.Writer
	Name() string
	Close() error
}

type cacheEntry struct {
	key     string
	name    string // hex SHA-256 of key: the file's name
	meta    cacheMeta
	readers int // being served; eviction skips it
	elem    *list.Element
	checked fileStamp // the file as it was when its digest last matched
}

// cacheMeta is an entry's sidecar.
type cacheMeta struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	SHA256       string    `json:"sha256"`
	ContentType  string    `json:"content_type,omitempty"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	Stored       time.Time `json:"stored"`
}

// fileStamp tells whether a file changed since it was checked.
type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(info os.FileInfo) fileStamp {
	return fileStamp{size: info.Size(), mtime: info.ModTime(), ino: inode(info)}
}

// cacheFill is one download filling a key; done closes when it ends,
// and written counts its bytes, which the requests waiting for it watch.
type cacheFill struct {
	done    chan struct{}
	written atomic.Int64
}

// fillStall is how long a request waits for another's download of the
// same artefact to make progress before it fetches its own, uncached: a
// client that reads slowly, or not at all, holds no one else.
var fillStall = 10 * time.Second

// OpenCache opens (making it if needed) the cache in dir, bounded to max
// bytes. Entries whose sidecar or length is wrong are removed.
func OpenCache(dir string, max int64) (*Cache, error) {
	if max < MinCacheBytes {
		return nil, fmt.Errorf("--egress-cache-size %d is below the minimum of %d (16 MiB)", max, int64(MinCacheBytes))
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("--egress-cache-dir %s: %w", dir, err)
	}
	c := &Cache{dir: dir, max: max, entries: map[string]*cacheEntry{}, lru: list.New(), fills: map[string]*cacheFill{},
		create: func(dir string) (cacheFile, error) { return os.CreateTemp(dir, "fill-") }}
	// Downloads a killed server never finished; a day old, so that another
	// server sharing the directory keeps the ones it is writing.
	leftovers, _ := filepath.Glob(filepath.Join(dir, "tmp", "*"))
	for _, f := range leftovers {
		if info, err := os.Stat(f); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.Remove(f)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "[0-9a-f][0-9a-f]", "*"))
	var sidecars []string
	for _, f := range files {
		if strings.HasSuffix(f, ".json") {
			sidecars = append(sidecars, f)
		} else if _, err := os.Stat(f + ".json"); err != nil { // a crash between the two renames
			_ = os.Remove(f)
		}
	}
	type found struct {
		e   *cacheEntry
		use time.Time
	}
	var all []found
	for _, side := range sidecars {
		e, use, err := c.load(side)
		if err != nil {
			c.stats.Damaged.Add(1)
			removeEntryFiles(strings.TrimSuffix(side, ".json"))
			continue
		}
		all = append(all, found{e, use})
	}
	// Oldest use first, so the list starts with the least recently used.
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].use.Before(all[j-1].use); j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	for _, f := range all {
		c.insertLocked(f.e)
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

// load reads one entry's sidecar and checks its file's length; the
// file's modification time is its last use.
func (c *Cache) load(side string) (*cacheEntry, time.Time, error) {
	data, err := os.ReadFile(side)
	if err != nil {
		return nil, time.Time{}, err
	}
	var m cacheMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, time.Time{}, err
	}
	name := strings.TrimSuffix(filepath.Base(side), ".json")
	if keyName(m.Key) != name || len(m.SHA256) != 64 {
		return nil, time.Time{}, errors.New("the sidecar is not its file's")
	}
	info, err := os.Stat(strings.TrimSuffix(side, ".json"))
	if err != nil || info.Size() != m.Size {
		return nil, time.Time{}, errors.New("the file is missing or its length is wrong")
	}
	return &cacheEntry{key: m.Key, name: name, meta: m}, info.ModTime(), nil
}

func keyName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// path is where the entry called name lives.
func (c *Cache) path(name string) string { return filepath.Join(c.dir, name[:2], name) }

func removeEntryFiles(path string) {
	_ = os.Remove(path + ".json")
	_ = os.Remove(path)
}

// insertLocked adds e as the most recently used; the caller holds c.mu
// or has c to itself.
func (c *Cache) insertLocked(e *cacheEntry) {
	if old := c.entries[e.key]; old != nil {
		c.dropLocked(old)
	}
	e.elem = c.lru.PushBack(e)
	c.entries[e.key] = e
	c.size += e.meta.Size
}

// dropLocked forgets e (its files stay; the caller removes them).
func (c *Cache) dropLocked(e *cacheEntry) {
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
		c.lru.Remove(e.elem)
		c.size -= e.meta.Size
	}
}

// evictLocked removes least recently used entries until the cache fits,
// skipping those being served.
func (c *Cache) evictLocked() {
	for el := c.lru.Front(); el != nil && c.size > c.max; {
		next := el.Next()
		if e := el.Value.(*cacheEntry); e.readers == 0 {
			c.dropLocked(e)
			removeEntryFiles(c.path(e.name))
			c.stats.Evictions.Add(1)
		}
		el = next
	}
}

// Stats returns the cache's counters.
func (c *Cache) Stats() *CacheStats { return &c.stats }

// Usage returns the bytes and entries the cache holds.
func (c *Cache) Usage() (bytes int64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size, len(c.entries)
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Max returns the cache's bound in bytes.
func (c *Cache) Max() int64 { return c.max }

// CacheUsage reads, without changing anything, what the cache in dir
// holds: its entries' bytes and number (for doctor, while a server may
// use it).
func CacheUsage(dir string) (bytes int64, entries int, err error) {
	if _, err := os.Stat(dir); err != nil {
		return 0, 0, err
	}
	sidecars, err := filepath.Glob(filepath.Join(dir, "[0-9a-f][0-9a-f]", "*.json"))
	for _, side := range sidecars {
		var m cacheMeta
		if data, err := os.ReadFile(side); err == nil && json.Unmarshal(data, &m) == nil {
			bytes += m.Size
			entries++
		}
	}
	return bytes, entries, err
}

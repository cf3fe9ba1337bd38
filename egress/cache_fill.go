package egress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// cachedFile is an entry being served: its file, open, and the entry,
// which eviction leaves alone until done is called.
type cachedFile struct {
	*os.File
	meta cacheMeta
	done func()
}

// acquire returns the verified entry for key (a hit), or a fill the
// caller must complete or abort (a miss), or neither when the caller is to
// fetch without keeping the answer: the cache's disk was full a moment
// ago, or another request's download of key made no progress for
// fillStall (its client may read slowly or not at all). While another
// request fills key, it waits for that one.
func (c *Cache) acquire(ctx context.Context, key string) (*cachedFile, *cacheFill, error) {
	for {
		c.mu.Lock()
		if e := c.entries[key]; e != nil {
			e.readers++
			c.lru.MoveToBack(e.elem)
			c.mu.Unlock()
			if f := c.openVerified(e); f != nil {
				return f, nil, nil
			}
			continue // damaged: removed, fetched again
		}
		if f := c.fills[key]; f != nil {
			c.mu.Unlock()
			if err := f.wait(ctx); err != nil {
				return nil, nil, err
			}
			if !isClosed(f.done) { // it stalled: go alone, uncached
				c.stats.Refused.Add(1)
				return nil, nil, nil
			}
			continue
		}
		if !c.fullAt.IsZero() && time.Since(c.fullAt) < fullPause {
			c.mu.Unlock()
			c.stats.Refused.Add(1)
			return nil, nil, nil
		}
		f := &cacheFill{done: make(chan struct{})}
		c.fills[key] = f
		c.mu.Unlock()
		return nil, f, nil
	}
}

// wait returns when the fill ends, or when it has made no progress for
// fillStall, or with ctx's error.
func (f *cacheFill) wait(ctx context.Context) error {
	tick := time.NewTicker(fillStall / 10)
	defer tick.Stop()
	last, since := f.written.Load(), time.Now()
	for {
		select {
		case <-f.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			if n := f.written.Load(); n != last {
				last, since = n, now
			} else if now.Sub(since) >= fillStall {
				return nil
			}
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// openVerified opens e's file, checking its length, and its digest when
// the file changed since it was last checked; a damaged entry is removed
// and nil returned. The caller counted itself in e.readers.
func (c *Cache) openVerified(e *cacheEntry) *cachedFile {
	release := func() {
		c.mu.Lock()
		e.readers--
		c.mu.Unlock()
	}
	f, err := os.Open(c.path(e.name))
	var info os.FileInfo
	if err == nil {
		info, err = f.Stat()
	}
	if err == nil && info.Size() == e.meta.Size {
		c.mu.Lock()
		checked := e.checked
		c.mu.Unlock()
		st := stampOf(info)
		if checked == st {
			return &cachedFile{File: f, meta: e.meta, done: func() { f.Close(); release() }}
		}
		h := sha256.New()
		if _, err = io.Copy(h, f); err == nil && hex.EncodeToString(h.Sum(nil)) == e.meta.SHA256 {
			if _, err = f.Seek(0, io.SeekStart); err == nil {
				c.mu.Lock()
				e.checked = st
				c.mu.Unlock()
				return &cachedFile{File: f, meta: e.meta, done: func() { f.Close(); release() }}
			}
		}
	}
	if f != nil {
		f.Close()
	}
	c.mu.Lock()
	e.readers--
	if c.entries[e.key] == e {
		c.dropLocked(e)
		removeEntryFiles(c.path(e.name))
		c.stats.Damaged.Add(1)
	}
	c.mu.Unlock()
	return nil
}

// cacheWriter writes a fill's download to a temporary file, hashing it.
// Once a write fails or the entry outgrows the cache's bound, it stops
// writing (the download goes on to its client) and the fill is aborted.
type cacheWriter struct {
	c      *Cache
	key    string
	fill   *cacheFill
	file   cacheFile
	hash   hash.Hash
	size   int64
	failed bool
}

// writer starts writing fill's entry for key; nil when the temporary
// file cannot be made (the fill is aborted then).
func (c *Cache) writer(key string, fill *cacheFill) *cacheWriter {
	f, err := c.create(filepath.Join(c.dir, "tmp"))
	if err != nil {
		c.noteFull(err)
		c.abort(key, fill)
		return nil
	}
	return &cacheWriter{c: c, key: key, fill: fill, file: f, hash: sha256.New()}
}

// Write never fails: the download it copies goes on whatever happens here.
func (w *cacheWriter) Write(p []byte) (int, error) {
	if w.failed {
		return len(p), nil
	}
	if w.size+int64(len(p)) > w.c.maxEntry() {
		w.failed = true
		return len(p), nil
	}
	n, err := w.file.Write(p)
	w.size += int64(n)
	w.fill.written.Add(int64(n))
	w.hash.Write(p[:n])
	if err != nil {
		w.failed = true
		w.c.noteFull(err)
	}
	return len(p), nil
}

// maxEntry bounds one entry: a quarter of the cache.
func (c *Cache) maxEntry() int64 { return c.max / 4 }

// noteFull stops new entries for a while when err says the disk is full.
func (c *Cache) noteFull(err error) {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		c.mu.Lock()
		c.fullAt = time.Now()
		c.mu.Unlock()
	}
}

// commit makes the download an entry, if it is complete (want bytes, or
// -1 for a complete chunked body) and every write succeeded; else it
// aborts. Either way the waiting requests go on.
func (w *cacheWriter) commit(meta cacheMeta, want int64) bool {
	closeErr := w.file.Close()
	tmp := w.file.Name()
	if w.failed || closeErr != nil || (want >= 0 && w.size != want) {
		w.c.noteFull(closeErr)
		_ = os.Remove(tmp)
		w.c.abort(w.key, w.fill)
		return false
	}
	meta.Key, meta.Size, meta.SHA256, meta.Stored = w.key, w.size, hex.EncodeToString(w.hash.Sum(nil)), time.Now().UTC()
	e := &cacheEntry{key: w.key, name: keyName(w.key), meta: meta}
	final := w.c.path(e.name)
	side, err := json.Marshal(meta)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(final), 0o700)
	}
	if err == nil {
		err = os.WriteFile(tmp+".json", side, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = os.Rename(tmp+".json", final+".json")
	}
	var info os.FileInfo
	if err == nil {
		info, err = os.Stat(final)
	}
	if err != nil {
		w.c.noteFull(err)
		_ = os.Remove(tmp)
		_ = os.Remove(tmp + ".json")
		removeEntryFiles(final)
		w.c.abort(w.key, w.fill)
		return false
	}
	e.checked = stampOf(info)
	c := w.c
	c.mu.Lock()
	c.insertLocked(e)
	c.evictLocked()
	delete(c.fills, w.key)
	c.mu.Unlock()
	close(w.fill.done)
	c.stats.Stored.Add(1)
	c.stats.StoredBytes.Add(w.size)
	return true
}

// abortWrite drops the download and lets the waiting requests go on.
func (w *cacheWriter) abortWrite() {
	_ = w.file.Close()
	_ = os.Remove(w.file.Name())
	w.c.abort(w.key, w.fill)
}

// abort ends fill for key without an entry; a waiting request fills it.
func (c *Cache) abort(key string, fill *cacheFill) {
	c.mu.Lock()
	if c.fills[key] == fill {
		delete(c.fills, key)
	}
	c.mu.Unlock()
	close(fill.done)
}

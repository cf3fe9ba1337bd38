package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ArtefactCache is the cache as a session's proxy uses it: the shared
// Cache, and the hosts whose artefacts it keeps (--egress-cache and the
// profile's egress_cache).
type ArtefactCache struct {
	Cache *Cache
	Hosts Policy
}

// caches says whether the proxy caches artefacts of t, which it must then
// intercept.
func (in *Injection) caches(t *target) bool {
	if in == nil || in.Authority == nil || in.Artefacts == nil || in.Artefacts.Cache == nil {
		return false
	}
	_, ok := in.Artefacts.Hosts.Match(t.host, t.port)
	return ok
}

// cacheKey returns the key under which req's answer is cached, and "" when
// it bypasses the cache (why says which rule, for the count; "" when the
// host is not cached at all or the path names no artefact). A request
// carrying a credential (the client's or the proxy's), a range, a
// condition or a cookie bypasses it, as does any path that is not in its
// one canonical form. Answers verified under different roots (Trust)
// have different keys.
func (in *Injection) cacheKey(req *http.Request, t *target, c *Credential) (key, why string) {
	if !in.caches(t) || !artefact(req.URL.Path) {
		return "", ""
	}
	switch {
	case c != nil:
		return "", "the host has a credential"
	case req.Method != http.MethodGet:
		return "", "not a GET"
	}
	for _, h := range []string{"Authorization", "Cookie", "Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		if _, ok := req.Header[h]; ok {
			return "", "the request has " + h
		}
	}
	path := req.URL.EscapedPath()
	if why := uncanonical(path); why != "" {
		return "", why
	}
	key = "https://" + net.JoinHostPort(t.host, strconv.Itoa(t.port)) + path
	if req.URL.RawQuery != "" || req.URL.ForceQuery {
		key += "?" + req.URL.RawQuery
	}
	if in.Trust != "" {
		// Before the URL, with a space no request target holds: no
		// request of another trust can spell this key.
		key = "trust " + in.Trust + " " + key
	}
	return key, ""
}

// uncanonical says why an escaped path is not in canonical form, or "":
// the key is the path as the upstream sees it, so nothing that a server
// could resolve to another path is cached.
func uncanonical(path string) string {
	lower := strings.ToLower(path)
	switch {
	case !strings.HasPrefix(path, "/"):
		return "the path is not absolute"
	case strings.Contains(path, "//"):
		return "the path has an empty segment"
	case strings.ContainsAny(path, "\\\x00#"):
		return "the path has a backslash, NUL or '#'"
	case strings.Contains(lower, "%2e") || strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%00") || strings.Contains(lower, "%25"):
		return "the path escapes '.', '/', '\\', '%' or NUL"
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return "the path has a '.' or '..' segment"
		}
	}
	return ""
}

// artefact says whether path names an immutable artefact of a registry:
// a Go module's .zip, .mod or .info, an npm tarball, a .deb, or a wheel or
// source archive of a Python package index.
func artefact(path string) bool {
	has := func(dir string, exts ...string) bool {
		if !strings.Contains(path, dir) {
			return false
		}
		for _, ext := range exts {
			if strings.HasSuffix(path, ext) {
				return true
			}
		}
		return false
	}
	return has("/@v/", ".zip", ".mod", ".info") || has("/-/", ".tgz") || has("/pool/", ".deb", ".udeb") ||
		has("/packages/", ".whl", ".tar.gz")
}

// uncacheable says why resp may not be kept, or "".
func uncacheable(resp *http.Response, max int64) string {
	h := resp.Header
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Sprintf("status %d", resp.StatusCode)
	case len(h.Values("Set-Cookie")) > 0:
		return "it sets a cookie"
	case h.Get("Content-Range") != "":
		return "it is a range"
	case h.Get("Content-Encoding") != "" && !strings.EqualFold(h.Get("Content-Encoding"), "identity"):
		return "it is encoded (" + h.Get("Content-Encoding") + ")"
	case resp.ContentLength > max:
		return fmt.Sprintf("%d bytes, more than an entry may hold (%d)", resp.ContentLength, max)
	case resp.ContentLength < 0 && !(len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"):
		return "its end cannot be told from a cut connection"
	}
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			if d == "no-store" || d == "private" || strings.HasPrefix(d, "private=") {
				return "Cache-Control: " + d
			}
		}
	}
	for _, v := range h.Values("Vary") {
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" && !strings.EqualFold(d, "Accept-Encoding") {
				return "Vary: " + d
			}
		}
	}
	return ""
}

// cacheOutcome is what happened to one request the cache could serve.
type cacheOutcome struct {
	result string // hit, stored, miss (not kept: why says why), refused (the disk is full)
	why    string
	bytes  int64
}

// serveCached answers req (whose key is key) from the cache, or from
// upstream through fetch, keeping the answer when it may be kept. It
// returns whether the connection may carry another request.
func (c *Cache) serveCached(down io.Writer, req *http.Request, key string, fetch func() (*http.Response, error)) (bool, cacheOutcome, error) {
	hit, fill, err := c.acquire(req.Context(), key)
	if err != nil {
		return false, cacheOutcome{result: "miss", why: err.Error()}, err
	}
	if hit != nil {
		defer hit.done()
		c.stats.Hits.Add(1)
		head := "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.FormatInt(hit.meta.Size, 10) + "\r\nX-Wink-Cache: hit\r\n"
		for name, v := range map[string]string{"Content-Type": hit.meta.ContentType, "Etag": hit.meta.ETag, "Last-Modified": hit.meta.LastModified} {
			if v != "" && !strings.ContainsAny(v, "\r\n") {
				head += name + ": " + v + "\r\n"
			}
		}
		if _, err := io.WriteString(down, head+"\r\n"); err != nil {
			return false, cacheOutcome{result: "hit"}, nil
		}
		buf := largeBuffers.Get()
		n, err := io.CopyBuffer(down, io.LimitReader(hit.File, hit.meta.Size), buf)
		largeBuffers.Put(buf)
		c.stats.HitBytes.Add(n)
		return err == nil && n == hit.meta.Size && !req.Close, cacheOutcome{result: "hit", bytes: n}, nil
	}
	c.stats.Misses.Add(1)
	req.Header.Del("Accept-Encoding") // an entry serves every client: keep the artefact as it is
	resp, err := fetch()
	if err != nil {
		if fill != nil {
			c.abort(key, fill)
		}
		return false, cacheOutcome{result: "miss", why: "the request failed"}, err
	}
	defer resp.Body.Close()
	out := cacheOutcome{result: "refused", why: "the cache's disk was full a moment ago"}
	var w *cacheWriter
	if fill != nil {
		if why := uncacheable(resp, c.maxEntry()); why != "" {
			c.abort(key, fill)
			out = cacheOutcome{result: "miss", why: why}
		} else if w = c.writer(key, fill); w != nil {
			resp.Header.Set("X-Wink-Cache", "miss")
			resp.Body = &teeBody{ReadCloser: resp.Body, w: w}
		} else {
			out = cacheOutcome{result: "miss", why: "the cache cannot write"}
		}
	}
	werr := resp.Write(down)
	if w != nil {
		tb := resp.Body.(*teeBody)
		if werr == nil && tb.eof && w.commit(cacheMeta{ContentType: resp.Header.Get("Content-Type"), ETag: resp.Header.Get("Etag"),
			LastModified: resp.Header.Get("Last-Modified")}, resp.ContentLength) {
			out = cacheOutcome{result: "stored", bytes: w.size}
		} else {
			if werr != nil || !tb.eof {
				w.abortWrite()
			}
			out = cacheOutcome{result: "miss", why: "the download did not complete"}
		}
	}
	if werr != nil {
		return false, out, nil
	}
	return !req.Close && !resp.Close, out, nil
}

// teeBody copies a response's body to a cache writer as it is read, and
// notes whether it was read to its end.
type teeBody struct {
	io.ReadCloser
	w   *cacheWriter
	eof bool
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	_, _ = t.w.Write(p[:n])
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

// relayCached answers an intercepted request the cache may serve (see
// serveCached), logs what the cache did, and says whether the connection
// may carry another request.
func (s *Session) relayCached(down io.Writer, out *http.Request, key string, t *target, up *http.Transport, start time.Time) bool {
	begun := time.Now()
	more, o, err := s.cfg.Inject.Artefacts.Cache.serveCached(down, out, key, func() (*http.Response, error) { return up.RoundTrip(out) })
	if err != nil {
		why := "the request failed: " + err.Error()
		s.logRefused(&refusal{status: http.StatusBadGateway, host: t.host, port: t.port, reason: why}, start)
		_, _ = io.WriteString(down, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+
			"wink-mcp egress proxy: "+why+"\n")
		return false
	}
	s.cfg.Log.Info("egress cache", "event", "egress_cache", "session", s.sessionID(), "result", o.result, "why", o.why,
		"host", t.host, "port", t.port, "path", out.URL.EscapedPath(), "bytes", o.bytes, "duration_ms", time.Since(begun).Milliseconds())
	return more
}

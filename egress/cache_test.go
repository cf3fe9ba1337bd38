package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cacheRig is two sessions' proxies sharing one artefact cache for
// example.com on the port of a local TLS upstream, which counts the
// requests it gets by path.
type cacheRig struct {
	upstream *httptest.Server
	host     string // example.com:port
	cache    *Cache
	ca       *Authority
	proxies  [2]string
	mu       sync.Mutex
	seen     map[string]int
	logs     bytes.Buffer
}

// artefactBody is what the upstream answers for path by default.
func artefactBody(path string) []byte {
	return bytes.Repeat([]byte(path+"\n"), 2000)
}

func newCacheRig(t *testing.T, handler http.HandlerFunc) *cacheRig {
	t.Helper()
	return newCacheRigIn(t, handler, filepath.Join(t.TempDir(), CacheDirName))
}

// newCacheRigIn is newCacheRig with the cache in dir.
func newCacheRigIn(t *testing.T, handler http.HandlerFunc, dir string) *cacheRig {
	t.Helper()
	rig := &cacheRig{seen: map[string]int{}}
	rig.upstream = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rig.mu.Lock()
		rig.seen[r.URL.EscapedPath()]++
		rig.mu.Unlock()
		if handler != nil {
			handler(w, r)
			return
		}
		w.Write(artefactBody(r.URL.Path))
	}))
	t.Cleanup(rig.upstream.Close)
	_, port, _ := net.SplitHostPort(rig.upstream.Listener.Addr().String())
	rig.host = "example.com:" + port
	var err error
	if rig.ca, err = LoadAuthority(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if rig.cache, err = OpenCache(dir, MinCacheBytes); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitFills(t, rig.cache) })
	policy, err := ParsePolicy([]string{rig.host})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(rig.upstream.Certificate())
	for i := range rig.proxies {
		s := NewSession(Config{Policy: policy,
			Resolve: func(context.Context, string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			},
			Inject: &Injection{Authority: rig.ca, Roots: roots, Artefacts: &ArtefactCache{Cache: rig.cache, Hosts: policy}},
			Log:    slog.New(slog.NewJSONHandler(lockedWriter{&rig.mu, &rig.logs}, nil))}, fmt.Sprintf("session-%d", i))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(ln)
		t.Cleanup(func() { ln.Close() })
		rig.proxies[i] = "http://" + ln.Addr().String()
	}
	return rig
}

// waitFills waits for the downloads c is filling to end (a test's last
// miss is stored after its client has the body), so that they write
// nothing into a directory the test is removing.
func waitFills(t *testing.T, c *Cache) {
	c.mu.Lock()
	var fills []*cacheFill
	for _, f := range c.fills {
		fills = append(fills, f)
	}
	c.mu.Unlock()
	for _, f := range fills {
		select {
		case <-f.done:
		case <-time.After(10 * time.Second):
			t.Error("a download into the cache did not end within 10 s of the test")
		}
	}
}

func (rig *cacheRig) upstreamSaw(path string) int {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return rig.seen[path]
}

// get fetches path through session i's proxy with the client's own
// headers, returning the status, the X-Wink-Cache header and the body.
func (rig *cacheRig) get(t *testing.T, i int, path string, header ...string) (int, string, []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rig.ca.CertPEM())
	u, _ := url.Parse(rig.proxies[i])
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+rig.host+path, nil)
	for j := 0; j+1 < len(header); j += 2 {
		req.Header.Set(header[j], header[j+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading: %v", path, err)
	}
	return resp.StatusCode, resp.Header.Get("X-Wink-Cache"), body
}

// dialTLS opens a TLS session to the upstream through session i's proxy,
// closed at the test's end.
func (rig *cacheRig) dialTLS(t *testing.T, i int) *tls.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(rig.proxies[i], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", rig.host, rig.host)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rig.ca.CertPEM())
	tc := tls.Client(c, &tls.Config{ServerName: "example.com", RootCAs: pool})
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	return tc
}

// raw sends request as written, over a TLS session through session i's
// proxy, and returns the answer's status line.
func (rig *cacheRig) raw(t *testing.T, i int, request string) string {
	t.Helper()
	tc := rig.dialTLS(t, i)
	io.WriteString(tc, request)
	line, _ := bufio.NewReader(tc).ReadString('\n')
	return strings.TrimSpace(line)
}

func (rig *cacheRig) entries() int {
	_, n := rig.cache.Usage()
	return n
}

// waitEntries waits until the cache holds n entries: an entry is kept
// once its download has reached the client, a moment after.
func (rig *cacheRig) waitEntries(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); rig.entries() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds %d entries, want %d", rig.entries(), n)
		}
	}
}

const (
	zipPath     = "/example.com/mod/@v/v1.0.0.zip"
	chunkedPath = "/example.com/chunked/@v/v1.0.0.zip" // answered without a length
)

// A second session gets an artefact the first one downloaded from disk,
// byte for byte; what is not an immutable artefact is fetched each time.
func TestCacheServesAnotherSessionFromDisk(t *testing.T) {
	rig := newCacheRig(t, nil)
	_, how, first := rig.get(t, 0, zipPath)
	rig.waitEntries(t, 1)
	status, how2, second := rig.get(t, 1, zipPath)
	if how != "miss" || how2 != "hit" || status != 200 || !bytes.Equal(first, second) || !bytes.Equal(second, artefactBody(zipPath)) {
		t.Fatalf("first %s, second %s %d, bodies equal %v", how, how2, status, bytes.Equal(first, second))
	}
	if n := rig.upstreamSaw(zipPath); n != 1 {
		t.Fatalf("the upstream saw %d requests, want 1", n)
	}
	for _, p := range []string{"/example.com/mod/@v/list", "/example.com/mod/@latest", "/left-pad", "/pool/main/h/hello/index.html"} {
		rig.get(t, 0, p)
		rig.get(t, 1, p)
		if n := rig.upstreamSaw(p); n != 2 {
			t.Errorf("%s: the upstream saw %d requests, want 2 (not cached)", p, n)
		}
	}
	st := rig.cache.Stats()
	if st.Hits.Load() != 1 || st.Stored.Load() != 1 || st.HitBytes.Load() != int64(len(first)) {
		t.Errorf("hits %d stored %d hit bytes %d", st.Hits.Load(), st.Stored.Load(), st.HitBytes.Load())
	}
	rig.mu.Lock()
	defer rig.mu.Unlock()
	if !strings.Contains(rig.logs.String(), `"result":"hit"`) || !strings.Contains(rig.logs.String(), `"session":"session-1"`) {
		t.Errorf("no hit logged for session-1:\n%s", rig.logs.String())
	}
}

// The shapes the cache keeps, and those it does not.
func TestCacheArtefactShapes(t *testing.T) {
	for path, want := range map[string]bool{
		"/golang.org/x/text/@v/v0.3.0.zip":                 true,
		"/golang.org/x/text/@v/v0.3.0.mod":                 true,
		"/golang.org/x/text/@v/v0.3.0.info":                true,
		"/golang.org/x/text/@v/list":                       false,
		"/golang.org/x/text/@latest":                       false,
		"/left-pad/-/left-pad-1.3.0.tgz":                   true,
		"/@babel/core/-/core-7.0.0.tgz":                    true,
		"/left-pad":                                        false,
		"/debian/pool/main/h/hello/hello_2.10-3_amd64.deb": true,
		"/debian/dists/bookworm/InRelease":                 false,
		"/packages/ab/cd/x-1.0-py3-none-any.whl":           true,
		"/packages/ab/cd/x-1.0.tar.gz":                     true,
		"/simple/x/":                                       false,
	} {
		if artefact(path) != want {
			t.Errorf("artefact(%q) = %v, want %v", path, !want, want)
		}
	}
}

// Paths a server could resolve to another path never make a key: each
// goes upstream as sent, and nothing is stored under any name.
func TestCacheRefusesPathTricks(t *testing.T) {
	rig := newCacheRig(t, nil)
	for _, p := range []string{"/x/../example.com/mod/@v/v1.0.0.zip", "/example.com/mod/%2e%2e/mod/@v/v1.0.0.zip",
		"/example.com/mod/%2E%2E/mod/@v/v1.0.0.zip", "//example.com/mod/@v/v1.0.0.zip", "/example.com/./mod/@v/v1.0.0.zip",
		"/example.com/mod%2f@v/v1.0.0.zip", "/example.com/mod/@v/%2576%31.zip", "/example.com\\mod/@v/v1.0.0.zip"} {
		line := rig.raw(t, 0, "GET "+p+" HTTP/1.1\r\nHost: "+rig.host+"\r\nConnection: close\r\n\r\n")
		if strings.Contains(line, "421") {
			t.Errorf("%s: %s", p, line)
		}
	}
	if n := rig.entries(); n != 0 {
		t.Fatalf("%d entries after path tricks, want 0", n)
	}
	if _, how, _ := rig.get(t, 1, zipPath); how != "miss" {
		t.Fatalf("the canonical path after the tricks: %q, want a miss", how)
	}
}

// What the upstream's answer says about other paths changes nothing: an
// entry is stored under the request's path only, and a redirect or an
// answer that is not plainly the whole artefact is not stored.
func TestCacheIgnoresACraftedResponse(t *testing.T) {
	rig := newCacheRig(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a/@v/v1.zip":
			w.Header().Set("Content-Location", "/b/@v/v1.zip")
			io.WriteString(w, "evil")
		case "/redirect/@v/v1.zip":
			http.Redirect(w, r, "/b/@v/v1.zip", http.StatusFound)
		case "/cookie/@v/v1.zip":
			w.Header().Set("Set-Cookie", "a=b")
			io.WriteString(w, "x")
		case "/private/@v/v1.zip":
			w.Header().Set("Cache-Control", "public, private")
			io.WriteString(w, "x")
		case "/vary/@v/v1.zip":
			w.Header().Set("Vary", "Accept-Encoding, Cookie")
			io.WriteString(w, "x")
		case "/gzip/@v/v1.zip":
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, "x")
		case "/partial/@v/v1.zip":
			w.Header().Set("Content-Range", "bytes 0-0/10")
			io.WriteString(w, "x")
		default:
			io.WriteString(w, "good "+r.URL.Path)
		}
	})
	rig.get(t, 0, "/a/@v/v1.zip")
	rig.waitEntries(t, 1)
	if _, how, body := rig.get(t, 1, "/b/@v/v1.zip"); how != "miss" || string(body) != "good /b/@v/v1.zip" {
		t.Fatalf("/b after /a named it: %s %q", how, body)
	}
	rig.waitEntries(t, 2)
	for _, p := range []string{"/redirect/@v/v1.zip", "/cookie/@v/v1.zip", "/private/@v/v1.zip", "/vary/@v/v1.zip", "/gzip/@v/v1.zip", "/partial/@v/v1.zip"} {
		rig.get(t, 0, p) // the client follows the redirect to /b, a hit
	}
	time.Sleep(100 * time.Millisecond)
	if n := rig.entries(); n != 2 {
		t.Fatalf("%d entries, want /a's and /b's only:\n%s", n, rig.logs.String())
	}
	if _, how, body := rig.get(t, 1, "/b/@v/v1.zip"); how != "hit" || string(body) != "good /b/@v/v1.zip" {
		t.Fatalf("/b: %s %q", how, body)
	}
}

// A request naming another host than its tunnel's gets 421 and stores
// nothing; neither do ranges, conditions and credentials the client sends,
// which go upstream as they are.
func TestCacheBypassesRangesConditionsAndCredentials(t *testing.T) {
	rig := newCacheRig(t, func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "x.zip", time.Unix(0, 0), bytes.NewReader(artefactBody(r.URL.Path)))
	})
	if line := rig.raw(t, 0, "GET "+zipPath+" HTTP/1.1\r\nHost: other.example:443\r\n\r\n"); !strings.Contains(line, "421") {
		t.Errorf("another Host: %s", line)
	}
	status, how, body := rig.get(t, 0, zipPath, "Range", "bytes=0-9")
	if status != http.StatusPartialContent || len(body) != 10 || how != "" {
		t.Errorf("a range: %d %q %d bytes", status, how, len(body))
	}
	for _, h := range [][]string{{"If-Modified-Since", time.Unix(100, 0).UTC().Format(http.TimeFormat)}, {"If-None-Match", `"x"`},
		{"Authorization", "Bearer mine"}, {"Cookie", "a=b"}} {
		if _, how, _ := rig.get(t, 1, zipPath, h...); how != "" {
			t.Errorf("%s: X-Wink-Cache %q, want none (bypassed)", h[0], how)
		}
	}
	if n := rig.entries(); n != 0 {
		t.Fatalf("%d entries, want 0", n)
	}
	if got := rig.cache.Stats().Bypasses.Load(); got != 5 {
		t.Errorf("%d bypasses, want 5", got)
	}
}

// A download cut mid-way, by the upstream or by the client, leaves no
// entry; the next request fetches the whole artefact and keeps it.
func TestCacheKeepsNoPartialDownload(t *testing.T) {
	var cut atomic.Bool
	cut.Store(true)
	full := bytes.Repeat([]byte("z"), 1<<20)
	rig := newCacheRig(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != chunkedPath {
			w.Header().Set("Content-Length", fmt.Sprint(len(full)))
		}
		if cut.Load() {
			w.Write(full[:len(full)/2])
			w.(http.Flusher).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.Write(full)
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rig.ca.CertPEM())
	u, _ := url.Parse(rig.proxies[0])
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if resp, err := c.Get("https://" + rig.host + zipPath); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatal("the client read a cut download to its end without an error")
		}
	}
	// The same without a length: the chunking is cut before its end.
	if resp, err := c.Get("https://" + rig.host + chunkedPath); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatal("the client read a cut chunked download to its end without an error")
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := rig.entries(); n != 0 {
		t.Fatalf("%d entries after the upstream cut the downloads", n)
	}
	// The client goes away after the first bytes.
	cut.Store(false)
	resp, err := c.Get("https://" + rig.host + zipPath)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 100))
	resp.Body.Close()
	c.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for rig.upstreamSaw(zipPath) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, how, body := rig.get(t, 1, zipPath); !bytes.Equal(body, full) || how == "hit" && rig.upstreamSaw(zipPath) < 2 {
		t.Fatalf("after the cuts: %s, %d bytes", how, len(body))
	}
	rig.waitEntries(t, 1)
	if _, how, body := rig.get(t, 0, zipPath); how != "hit" || !bytes.Equal(body, full) {
		t.Fatalf("the whole artefact was not kept: %s, %d bytes", how, len(body))
	}
	if files, _ := filepath.Glob(filepath.Join(rig.cache.Dir(), "tmp", "*")); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}
}

// Many requests of two sessions racing for one artefact make one upstream
// download, and every one of them gets all of it.
func TestCacheRacingRequestsMakeOneDownload(t *testing.T) {
	rig := newCacheRig(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		w.Write(artefactBody(r.URL.Path))
	})
	var wg sync.WaitGroup
	bodies := make([][]byte, 8)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, bodies[i] = rig.get(t, i%2, zipPath)
		}()
	}
	wg.Wait()
	for i, b := range bodies {
		if !bytes.Equal(b, artefactBody(zipPath)) {
			t.Errorf("request %d got %d bytes, not the artefact", i, len(b))
		}
	}
	if n := rig.upstreamSaw(zipPath); n != 1 {
		t.Fatalf("the upstream saw %d downloads, want 1", n)
	}
}

package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// openPort calls workspace_port open and returns the URL.
func openPort(t *testing.T, p *proc, port int) string {
	t.Helper()
	res := p.call("workspace_port", map[string]any{"action": "open", "port": port})
	if res.IsError {
		t.Fatalf("workspace_port open %d: %s", port, textOf(res))
	}
	var out tools.WorkspacePortResult
	decodeStructured(t, res, &out)
	if out.Port == nil || !strings.HasPrefix(out.Port.URL, "http://127.0.0.1:") {
		t.Fatalf("workspace_port open: %+v; want a URL on this machine's loopback", out)
	}
	return out.Port.URL
}

// fetch GETs url and returns the status and body ("" and the error text
// when no answer came).
func fetch(url string) (int, string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A server the model starts in the workspace is reached from this machine
// through the URL workspace_port returns, with no network in the
// container; before it listens the URL answers at once with a page that
// says so; another session neither sees nor closes the port; the port
// closes with its session.
func TestWorkspacePortPreview(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, image: pythonImage, args: []string{"--warm", "0"}})
		url := openPort(t, p, 8000)
		begin := time.Now()
		status, body := fetch(url)
		if status != http.StatusBadGateway || !strings.Contains(body, "nothing answers on port 8000") || time.Since(begin) > 5*time.Second {
			t.Errorf("before the server listens: %d %q after %s; want an immediate 502 page saying nothing answers", status, body, time.Since(begin))
		}
		if res := p.call("write_file", map[string]any{"file_path": "site/index.html", "content": "served from the workspace\n"}); res.IsError {
			t.Fatal(textOf(res))
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			// Nothing outlives its call: the server runs while this call does.
			p.call("podman_shell", map[string]any{"command": []string{"timeout", "8", "python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"}, "timeout_seconds": 60})
		})
		var got string
		waitUntil(t, 8*time.Second, "the workspace's server through the URL", func() bool {
			status, got = fetch(url)
			return status == http.StatusOK
		})
		if got != "served from the workspace\n" {
			t.Errorf("through the URL: %q", got)
		}
		// The proxy port of a session without --egress answers that there is no network.
		if out := rawProxy(t, p, "CONNECT example.org:443 HTTP/1.1\r\n\r\n"); !strings.Contains(out, "403") || !strings.Contains(out, "no network") {
			t.Errorf("the proxy port without --egress: %q", out)
		}
		if tr == "http" {
			other := *p
			other.client = nil
			other.connect(nil)
			var list tools.WorkspacePortResult
			decodeStructured(t, other.call("workspace_port", map[string]any{"action": "list"}), &list)
			if len(list.Ports) != 0 {
				t.Errorf("another session lists %v", list.Ports)
			}
			if res := other.call("workspace_port", map[string]any{"action": "close", "port": 8000}); !res.IsError || !strings.Contains(textOf(res), "not open in this session") {
				t.Errorf("another session closing the port: %s", textOf(res))
			}
			other.endSession()
		}
		wg.Wait()
		p.endSession()
		waitUntil(t, 20*time.Second, "the port to close with its session", func() bool {
			status, _ := fetch(url)
			return status == 0
		})
	})
}

// A session may open MaxPorts ports; the next is refused saying how many,
// closing one makes room, and a port opened twice is the same URL.
func TestWorkspacePortLimits(t *testing.T) {
	p := start(t, startOptions{args: []string{"--warm", "0"}})
	first := openPort(t, p, 1)
	if again := openPort(t, p, 1); again != first {
		t.Errorf("opening port 1 twice: %s then %s", first, again)
	}
	for port := 2; port <= 8; port++ {
		openPort(t, p, port)
	}
	res := p.call("workspace_port", map[string]any{"action": "open", "port": 9})
	if !res.IsError || !strings.Contains(textOf(res), "at most 8 ports") {
		t.Fatalf("a ninth port: %s", textOf(res))
	}
	if res := p.call("workspace_port", map[string]any{"action": "close", "port": 1}); res.IsError {
		t.Fatal(textOf(res))
	}
	if status, _ := fetch(first); status != 0 {
		t.Errorf("a closed port still answers (%d)", status)
	}
	openPort(t, p, 9)
}

// A crowd on a port: 300 connections at once from this machine to a
// session's open port, while another session calls. The port carries 64 at
// once and answers the rest with a 503 page at once; the other session's
// calls go on. Part of the reliability suite.
func TestReliabilityPortFlood(t *testing.T) {
	p := start(t, startOptions{transport: "http", image: pythonImage, args: []string{"--warm", "0"}})
	url := openPort(t, p, 8000)
	var server sync.WaitGroup
	server.Go(func() {
		// python3 -m http.server listens with a backlog of 5: 64 connections
		// at once overflow it, and a dropped SYN is sent again a second or
		// seven later, under load past the client's 10 s (it happened).
		// What is tried here is the tunnel, so the server's backlog is 128.
		serve := "import http.server as h; h.ThreadingHTTPServer.request_queue_size = 128; " +
			"h.test(HandlerClass=h.SimpleHTTPRequestHandler, ServerClass=h.ThreadingHTTPServer, port=8000, bind='127.0.0.1')"
		p.call("podman_shell", map[string]any{"command": []string{"timeout", "20", "python3", "-c", serve}, "timeout_seconds": 60})
	})
	waitUntil(t, 8*time.Second, "the server through the URL", func() bool {
		status, _ := fetch(url)
		return status == http.StatusOK
	})
	done := neighbourCalls(t, p)
	const n = 300
	var mu sync.Mutex
	statuses := map[int]int{}
	var failures []string
	var crowd sync.WaitGroup
	for range n {
		crowd.Go(func() {
			status, body := fetch(url)
			mu.Lock()
			statuses[status]++
			if status == 0 {
				failures = append(failures, body)
			}
			mu.Unlock()
		})
	}
	crowd.Wait()
	calls, failed := done()
	broken := 0
	if statuses[http.StatusOK] == 0 || statuses[http.StatusOK]+statuses[http.StatusServiceUnavailable] != n {
		t.Errorf("%d connections at once: statuses %v (%q); want answers only, 200 or 503", n, statuses, failures)
		broken++
	}
	if failed > 0 || len(calls) == 0 {
		t.Errorf("the neighbour session: %d calls failed, %d answered", failed, len(calls))
		broken++
	}
	recordPromise(promiseFigure{Class: "port flood: 300 connections at once to a session's open port, another session calling meanwhile", Tried: n, Broken: broken,
		Measured: fmt.Sprintf("%d answered 200, %d got the 503 page (64 at once per port); the other session's %d calls: p99 %.1f ms, 0 failed",
			statuses[http.StatusOK], statuses[http.StatusServiceUnavailable], len(calls), percentile(calls, 99))})
	server.Wait()
}

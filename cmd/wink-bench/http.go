package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// httpServer is one wink-mcp serving streamable HTTP, whose log the
// benchmark reads to know when its pool is full.
type httpServer struct {
	cmd   *exec.Cmd
	cache string
	url   string
	// pooled counts pooled containers made ready, taken those handed out.
	pooled, taken atomic.Int64
}

// startHTTPServer starts wink-mcp over streamable HTTP with extra flags.
func startHTTPServer(cfg config, extra ...string) (*httpServer, error) {
	cache, err := os.MkdirTemp("", "wink-bench-")
	if err != nil {
		return nil, err
	}
	args := append(serverArgs(cfg, cache), "--transport", "http", "--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug")
	s := &httpServer{cmd: exec.Command(cfg.bin, append(args, extra...)...), cache: cache}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			var rec struct {
				Msg, URL, Level string
				Err             string `json:"err"`
			}
			if json.Unmarshal(lines.Bytes(), &rec) != nil {
				continue
			}
			switch rec.Msg {
			case "serving MCP over HTTP":
				found <- rec.URL
			case "pooled container ready":
				s.pooled.Add(1)
			case "workspace taken_from_pool":
				s.taken.Add(1)
			}
			if rec.Level == "WARN" || rec.Level == "ERROR" {
				fmt.Fprintf(os.Stderr, "wink-mcp: %s %s\n", rec.Msg, rec.Err)
			}
		}
	}()
	select {
	case s.url = <-found:
		return s, nil
	case <-time.After(30 * time.Second):
		s.close()
		return nil, fmt.Errorf("wink-mcp did not start serving HTTP within 30s")
	}
}

// waitPool waits until n pooled containers wait for a session.
func (s *httpServer) waitPool(n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for s.pooled.Load()-s.taken.Load() < int64(n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the pool held %d of %d containers after %s", s.pooled.Load()-s.taken.Load(), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// close stops the server (it removes its containers) and deletes its cache.
func (s *httpServer) close() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.cache)
}

// httpSession is one MCP session over streamable HTTP, with mcp-go's client.
type httpSession struct{ c *client.Client }

// openHTTPSession initializes a session (mcp-go then sends initialized).
func openHTTPSession(ctx context.Context, url string) (*httpSession, error) {
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "wink-bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, err
	}
	return &httpSession{c: c}, nil
}

// call runs a tool that must succeed.
func (h *httpSession) call(ctx context.Context, name string, args map[string]any) error {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	res, err := h.c.CallTool(ctx, req)
	if err == nil && res.IsError {
		err = fmt.Errorf("%s failed: %v", name, res.Content)
	}
	return err
}

func (h *httpSession) close() { h.c.Close() }

// measureHTTPFirstCalls opens n sessions one after another in one running
// server and times each one's first call, sent right after initialize
// (untimed, as is the pool refilling, when there is one, before the next
// session, and the session's end after it).
func measureHTTPFirstCalls(ctx context.Context, cfg config, name string, n, warm int) measurement {
	srv, err := startHTTPServer(cfg, "--warm", fmt.Sprint(warm))
	if err != nil {
		return failed(name, err)
	}
	defer srv.close()
	var s *httpSession
	return measureSetup(name, n, func() (err error) {
		if err = srv.waitPool(warm, 2*time.Minute); err == nil {
			s, err = openHTTPSession(ctx, srv.url)
		}
		return err
	}, func(int) error {
		return s.call(ctx, "podman_shell", map[string]any{"command": []string{"true"}})
	}, func() { s.close() })
}

// measureHTTPBurst opens n sessions at once in a server started with
// extra flags, after its pool (if any) is full, and times each session's
// initialize and first call; every failure counts.
func measureHTTPBurst(ctx context.Context, cfg config, name string, n, warm int, extra ...string) measurement {
	srv, err := startHTTPServer(cfg, append([]string{"--warm", fmt.Sprint(warm)}, extra...)...)
	if err != nil {
		return failed(name, err)
	}
	defer srv.close()
	if err := srv.waitPool(warm, 10*time.Minute); err != nil {
		return failed(name, err)
	}
	var (
		mu        sync.Mutex
		durations []time.Duration
		errs      int
		wg        sync.WaitGroup
	)
	begin := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-begin
			start := time.Now()
			s, err := openHTTPSession(ctx, srv.url)
			if err == nil {
				defer s.close()
				err = s.call(ctx, "podman_shell", map[string]any{"command": []string{"true"}})
			}
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
				return
			}
			durations = append(durations, d)
		})
	}
	close(begin)
	wg.Wait()
	m := summarize(name, durations)
	m.Errors = errs
	return m
}

// measureFixedRate opens sessions sessions (untimed), then for duration
// sends read_file calls at rate calls a second in all, spread evenly over
// the sessions and sent on schedule whether or not earlier calls have
// answered (an open loop: a slow server meets more load, not less).
func measureFixedRate(ctx context.Context, cfg config, name string, sessions int, rate float64, duration time.Duration) measurement {
	srv, err := startHTTPServer(cfg, "--warm", "0", "--max-sessions", fmt.Sprint(sessions+8))
	if err != nil {
		return failed(name, err)
	}
	defer srv.close()
	open := make([]*httpSession, sessions)
	var wg sync.WaitGroup
	var openErr atomic.Value
	for i := range open {
		wg.Go(func() {
			s, err := openHTTPSession(ctx, srv.url)
			if err == nil {
				err = s.call(ctx, "write_file", map[string]any{"file_path": "read.txt", "content": fourKiB})
			}
			if err != nil {
				openErr.Store(err)
				return
			}
			open[i] = s
		})
	}
	wg.Wait()
	defer func() {
		for _, s := range open {
			if s != nil {
				s.close()
			}
		}
	}()
	if err, _ := openErr.Load().(error); err != nil {
		return failed(name, err)
	}
	var (
		mu        sync.Mutex
		durations []time.Duration
		errs      int
	)
	interval := time.Duration(float64(time.Second) / rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	end := time.After(duration)
	for i := 0; ; i++ {
		select {
		case <-end:
			wg.Wait()
			m := summarize(name, durations)
			m.Errors = errs
			return m
		case <-tick.C:
		}
		s := open[i%sessions]
		wg.Go(func() {
			start := time.Now()
			err := s.call(ctx, "read_file", map[string]any{"file_path": "read.txt"})
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				return
			}
			durations = append(durations, d)
		})
	}
}

// failed is the row of a measurement that could not run.
func failed(name string, err error) measurement {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return measurement{Name: name, Errors: 1}
}

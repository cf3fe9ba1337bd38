package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// fourKiB is the content of the files read and written.
var fourKiB = strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 64)

// session is one wink-mcp process driven over stdio by a minimal JSON-RPC
// client: it writes requests and decodes only what it checks, so the
// numbers are the server's, not a client library's.
type session struct {
	cmd       *exec.Cmd
	in        io.WriteCloser
	out       *bufio.Reader
	next      int
	container string
	cache     string // deleted on close unless kept
	keepCache bool
}

// serverArgs are the flags every measured wink-mcp runs with: on the
// Podman service, or on cfg.kubernetes when it is set.
func serverArgs(cfg config, cache string) []string {
	engineArgs := []string{"--podman-url", "unix://" + cfg.socket}
	if cfg.kubernetes != nil {
		engineArgs = cfg.kubernetes.serverArgs()
	}
	return append([]string{"--image", cfg.image, "--cache-dir", cache, "--name-prefix", "wink-bench", "--log-level", "error"}, engineArgs...)
}

// startSession starts a wink-mcp process with a cache directory of its own
// and initializes its session.
func startSession(ctx context.Context, cfg config) (*session, error) {
	return startSessionIn(ctx, cfg, "")
}

// startSessionIn is startSession with the cache directory cache, kept at
// close, as a desktop user's is from one start of the server to the next
// ("" makes one that close deletes), and extra flags.
func startSessionIn(_ context.Context, cfg config, cache string, extra ...string) (*session, error) {
	keep := cache != ""
	if !keep {
		var err error
		if cache, err = os.MkdirTemp("", "wink-bench-"); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(cfg.bin, append(serverArgs(cfg, cache), extra...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), cache: cache, keepCache: keep}
	if err := s.initialize(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close ends the session (the server removes its container) and deletes its cache.
func (s *session) close() {
	if s.cmd == nil {
		return
	}
	s.in.Close()
	_ = s.cmd.Wait()
	s.cmd = nil
	if !s.keepCache {
		os.RemoveAll(s.cache)
	}
}

// answer is the part of a JSON-RPC answer the benchmark checks.
type answer struct {
	ID     int `json:"id"`
	Result struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// request sends one JSON-RPC request and waits for its answer.
func (s *session) request(method string, params any) (*answer, error) {
	s.next++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := s.in.Write(append(req, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		var a answer
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, err
		}
		if a.ID != s.next {
			continue // a notification
		}
		if a.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, a.Error.Message)
		}
		return &a, nil
	}
}

// call runs one tool and returns its answer, a tool error included.
func (s *session) call(_ context.Context, name string, args map[string]any) (*answer, error) {
	return s.request("tools/call", map[string]any{"name": name, "arguments": args})
}

// expect runs a call that must succeed.
func (s *session) expect(ctx context.Context, name string, args map[string]any) error {
	a, err := s.call(ctx, name, args)
	if err != nil {
		return err
	}
	if a.Result.IsError {
		msg := ""
		if len(a.Result.Content) > 0 {
			msg = a.Result.Content[0].Text
		}
		return fmt.Errorf("%s: %s", name, msg)
	}
	return nil
}

// prepare starts the container and creates the files the measurements use.
func (s *session) prepare(ctx context.Context) error {
	a, err := s.call(ctx, "podman_shell", map[string]any{"action": "start"})
	if err != nil || a.Result.IsError {
		return fmt.Errorf("starting the workspace: %v %+v", err, a)
	}
	var started struct {
		Container string `json:"container"`
	}
	if err := json.Unmarshal(a.Result.StructuredContent, &started); err != nil {
		return err
	}
	s.container = started.Container
	for path, content := range map[string]string{"bench/read.txt": fourKiB, "bench/edit.txt": "MARK-A\n" + fourKiB[7:]} {
		if err := s.expect(ctx, "write_file", map[string]any{"file_path": path, "content": content}); err != nil {
			return err
		}
	}
	script := `mkdir -p bench/grep && cd bench/grep && i=0; while [ $i -lt 1000 ]; do ` +
		`printf 'line one\nneedle-%d here\nline three\n' $i > f$i.txt; i=$((i+1)); done`
	return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"sh", "-c", script}, "timeout_seconds": 120})
}

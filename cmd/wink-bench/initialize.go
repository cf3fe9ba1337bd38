package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
)

// measureInitialize times the initialize request of new stdio processes,
// the first thing every client sends, once the process answers a ping:
// with the Podman service answering, with nothing at the socket's path,
// and with a socket that takes connections and never answers (a service
// that hangs). Its answer carries the instructions, which name the
// session's image: none of the three may wait for the service. With
// cfg.baselineBin, that binary's three rows follow, as baselines.
func measureInitialize(ctx context.Context, cfg config) []measurement {
	rows := measureInitializeOf(ctx, cfg, "")
	if cfg.baselineBin != "" {
		baseline := cfg
		baseline.bin = cfg.baselineBin
		rows = append(rows, measureInitializeOf(ctx, baseline, "baseline ("+cfg.baselineBin+"): ")...)
	}
	return rows
}

// measureInitializeOf is measureInitialize of cfg.bin, its rows' names
// prefixed with prefix; only rows without one have a target.
func measureInitializeOf(ctx context.Context, cfg config, prefix string) []measurement {
	dir, err := os.MkdirTemp("", "wink-bench-init-")
	if err != nil {
		return []measurement{failed("initialize", err)}
	}
	defer os.RemoveAll(dir)
	silent := filepath.Join(dir, "silent.sock")
	ln, err := net.Listen("unix", silent)
	if err != nil {
		return []measurement{failed("initialize", err)}
	}
	defer ln.Close()
	go holdSilently(ln)
	var out []measurement
	for _, c := range []struct{ name, socket string }{
		{"initialize of a new stdio process", cfg.socket},
		{"initialize of a new stdio process, no Podman service at the socket", filepath.Join(dir, "absent.sock")},
		{"initialize of a new stdio process, a Podman service that never answers", silent},
	} {
		var s *session
		start := func() (err error) {
			s, err = startUninitialized(ctx, cfg, c.socket)
			if err == nil {
				_, err = s.request("ping", map[string]any{})
			}
			return err
		}
		initialize := func(int) error { return s.initialize() }
		m := measureSetup(prefix+c.name, cfg.coldSamples, start, initialize, func() { s.close() })
		if prefix == "" {
			m.Target, m.Met = "p50 <= 2 ms", m.P50 <= 2 && m.Errors == 0
		}
		out = append(out, m)
	}
	return out
}

// holdSilently takes every connection on ln and never answers, until ln
// is closed; the connections stay open.
func holdSilently(ln net.Listener) {
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		held = append(held, c)
	}
}

// startUninitialized starts a wink-mcp process over stdio whose Podman
// service is at socket, with a cache directory of its own that close
// deletes, and sends it nothing.
func startUninitialized(_ context.Context, cfg config, socket string) (*session, error) {
	cache, err := os.MkdirTemp("", "wink-bench-")
	if err != nil {
		return nil, err
	}
	args := append(serverArgs(cfg, cache), "--podman-url", "unix://"+socket)
	cmd := exec.Command(cfg.bin, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &session{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), cache: cache}, nil
}

// initialize sends the initialize request and the initialized notification.
func (s *session) initialize() error {
	if _, err := s.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "wink-bench", "version": "1"}}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	_, err := s.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	return err
}

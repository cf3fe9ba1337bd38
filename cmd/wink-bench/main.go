// Command wink-bench measures wink-mcp end to end. It drives the built
// binary over stdio with a minimal JSON-RPC client (and, for comparison,
// mcp-go's) against the real Podman service,
// prints p50 and p99 of each measurement with its target, and writes the
// same numbers as JSON. The baseline, one `podman exec` of cat per read
// through the bindings, runs in the same process against the same container,
// so the ratio holds however loaded the machine is.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

type config struct {
	bin, image, socket, out string
	samples, coldSamples    int
	sessions, sessionOps    int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "bin/wink-mcp", "the wink-mcp binary to measure")
	flag.StringVar(&cfg.image, "image", "localhost/wink-workspace:bookworm", "workspace image (must be present)")
	flag.StringVar(&cfg.socket, "socket", "/run/podman/podman.sock", "Podman service socket")
	flag.StringVar(&cfg.out, "out", "bench-results.json", "where to write the results as JSON")
	flag.IntVar(&cfg.samples, "samples", 300, "calls per latency measurement")
	flag.IntVar(&cfg.coldSamples, "cold-samples", 200, "new sessions for the cold-start measurement")
	flag.IntVar(&cfg.sessions, "sessions", 20, "concurrent sessions in the load measurement")
	flag.IntVar(&cfg.sessionOps, "session-ops", 100, "calls per concurrent session")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "wink-bench: %v\n", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	ctx := context.Background()
	rep := report{Machine: describeMachine(cfg), Command: strings.Join(os.Args, " ")}

	s, err := startSession(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.prepare(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "measuring warm calls in container %s...\n", s.container)
	// A call the server rejects before it reaches the workspace: the cost of
	// the MCP stack alone (stdio, JSON-RPC, schema validation), for reference.
	protocol := measure("rejected call (MCP stack only)", cfg.samples, func(int) error {
		res, err := s.call(ctx, "read_file", map[string]any{"file_path": "/absolute"})
		if err == nil && !res.Result.IsError {
			err = fmt.Errorf("an absolute path was accepted")
		}
		return err
	})
	reads := measure("read_file 4 KiB", cfg.samples, func(int) error {
		return s.expect(ctx, "read_file", map[string]any{"file_path": "bench/read.txt"})
	})
	writes := measure("write_file 4 KiB", cfg.samples, func(int) error {
		return s.expect(ctx, "write_file", map[string]any{"file_path": "bench/write.txt", "content": fourKiB})
	})
	edits := measure("edit_file on 4 KiB", cfg.samples, func(i int) error {
		old, repl := "MARK-A", "MARK-B"
		if i%2 == 1 {
			old, repl = repl, old
		}
		return s.expect(ctx, "edit_file", map[string]any{"file_path": "bench/edit.txt", "old_string": old, "new_string": repl})
	})
	greps := measure("grep over 1,000 files", cfg.samples, func(int) error {
		return s.expect(ctx, "grep", map[string]any{"pattern": "needle-7[0-9]", "path": "bench/grep"})
	})
	shells := measure("podman_shell [\"true\"]", cfg.samples, func(int) error {
		return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"true"}})
	})
	baseline, err := measureExecBaseline(ctx, cfg, s.container, cfg.samples)
	if err != nil {
		return err
	}
	s.close()
	viaMCPGo, err := measureMCPGoRead(ctx, cfg)
	if err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "measuring %d cold starts...\n", cfg.coldSamples)
	cold := measureColdStart(ctx, cfg)
	fmt.Fprintf(os.Stderr, "measuring %d concurrent sessions...\n", cfg.sessions)
	load := measureConcurrent(ctx, cfg)

	reads.target, reads.met = "p50 <= 1 ms", reads.P50 <= 1
	shells.target, shells.met = "p50 <= 10 ms", shells.P50 <= 10
	cold.target, cold.met = "p50 <= 400 ms", cold.P50 <= 400
	load.target, load.met = "0 errors", load.Errors == 0
	rep.Measurements = []measurement{protocol, reads, viaMCPGo, writes, edits, greps, shells, baseline, cold, load}
	rep.ReadSpeedup = baseline.P50 / reads.P50
	rep.SpeedupMet = rep.ReadSpeedup >= 50
	rep.print(os.Stdout)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(cfg.out, append(b, '\n'), 0o644)
}

// measureColdStart times, for new sessions one after another, the first
// tool call: from the call to its result, container creation included.
func measureColdStart(ctx context.Context, cfg config) measurement {
	var s *session
	return measureSetup("cold start (first call of a new session)", cfg.coldSamples,
		func() (err error) {
			s, err = startSession(ctx, cfg)
			return err
		},
		func(int) error {
			return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"true"}})
		},
		func() { s.close() })
}

// measureConcurrent runs cfg.sessions sessions at once, each alternating
// writes and reads of its own file, and pools their latencies. Each
// session's container is started first, untimed; then all begin together.
func measureConcurrent(ctx context.Context, cfg config) measurement {
	var (
		mu        sync.Mutex
		durations []time.Duration
		errors    int
		ready     sync.WaitGroup
		wg        sync.WaitGroup
	)
	begin := make(chan struct{})
	ready.Add(cfg.sessions)
	for range cfg.sessions {
		wg.Go(func() {
			s, err := startSession(ctx, cfg)
			if err == nil {
				defer s.close()
				err = s.expect(ctx, "podman_shell", map[string]any{"action": "start"})
			}
			ready.Done()
			<-begin
			if err != nil {
				mu.Lock()
				errors += cfg.sessionOps
				mu.Unlock()
				return
			}
			for i := range cfg.sessionOps {
				start := time.Now()
				var err error
				if i%2 == 0 {
					err = s.expect(ctx, "write_file", map[string]any{"file_path": "mine.txt", "content": fourKiB})
				} else {
					err = s.expect(ctx, "read_file", map[string]any{"file_path": "mine.txt"})
				}
				d := time.Since(start)
				mu.Lock()
				durations = append(durations, d)
				if err != nil {
					errors++
				}
				mu.Unlock()
			}
		})
	}
	ready.Wait()
	close(begin)
	wg.Wait()
	m := summarize(fmt.Sprintf("%d concurrent sessions, reads and writes", cfg.sessions), durations)
	m.Errors = errors
	return m
}

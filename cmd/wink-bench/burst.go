package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// measureBursts times -burst sessions opened at once with no pool, each's
// initialize and first call: quiet, then beside a CPU hog holding every
// core; with -baseline-bin the same two rows of that build come first, so
// both are measured on the same machine in the same run.
func measureBursts(ctx context.Context, cfg config) []measurement {
	builds := []struct {
		cfg   config
		label string
	}{{cfg, ""}}
	if cfg.baselineBin != "" {
		base := cfg
		base.bin = cfg.baselineBin
		builds = append([]struct {
			cfg   config
			label string
		}{{base, "baseline build: "}}, builds...)
	}
	extra := []string{"--max-sessions", fmt.Sprint(cfg.burst + 14)}
	var rows []measurement
	for _, b := range builds {
		name := fmt.Sprintf("%sHTTP: %d sessions at once, initialize + first call, --warm 0", b.label, cfg.burst)
		fmt.Fprintf(os.Stderr, "measuring %s...\n", name)
		quiet := measureHTTPBurst(ctx, b.cfg, name, cfg.burst, 0, extra...)
		fmt.Fprintf(os.Stderr, "measuring %s beside a CPU hog...\n", name)
		stop, err := hogCPUs(runtime.NumCPU())
		var hogged measurement
		if err != nil {
			hogged = failed(name+", beside a CPU hog holding every core", err)
		} else {
			hogged = measureHTTPBurst(ctx, b.cfg, name+", beside a CPU hog holding every core", cfg.burst, 0, extra...)
			stop()
		}
		quiet.Target, quiet.Met = "p99 <= 5 s, 0 errors", quiet.P99 <= 5000 && quiet.Errors == 0
		hogged.Target, hogged.Met = "0 errors", hogged.Errors == 0
		rows = append(rows, quiet, hogged)
		time.Sleep(5 * time.Second) // the last burst's removals settle
	}
	return rows
}

// hogCPUs starts n processes that each spin on a core until stop is called.
func hogCPUs(n int) (stop func(), err error) {
	var hogs []*exec.Cmd
	stop = func() {
		for _, c := range hogs {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting a CPU hog: %w", err)
		}
		hogs = append(hogs, c)
	}
	return stop, nil
}

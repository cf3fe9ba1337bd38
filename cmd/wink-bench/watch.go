package main

import (
	"context"
	"fmt"
)

// watchSamples is how many times each 10,000-file command runs.
const watchSamples = 10

// writeTenThousand writes 10,000 small files into a new directory: a
// build's or an install's burst, in the shell the bench image has.
const writeTenThousand = `rm -rf burst && mkdir burst && i=0; while [ $i -lt 10000 ]; do echo x > burst/f$i; i=$((i+1)); done`

// measureWatchCost runs a command that writes 10,000 files in a session
// whose workspace is watched (the default), and, as the baseline, in one
// started with --watch-dirs 0, so the watch's cost to the command shows.
func measureWatchCost(ctx context.Context, cfg config) (watched, unwatched measurement) {
	watchedName := "podman_shell writing 10,000 files, workspace watched"
	unwatchedName := "baseline: the same, --watch-dirs 0"
	run := func(name string, extra ...string) measurement {
		s, err := startSessionIn(ctx, cfg, "", extra...)
		if err != nil {
			return failed(name, err)
		}
		defer s.close()
		if err := s.prepare(ctx); err != nil {
			return failed(name, fmt.Errorf("preparing: %w", err))
		}
		return measure(name, watchSamples, func(int) error {
			return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"sh", "-c", writeTenThousand}, "timeout_seconds": 120})
		})
	}
	return run(watchedName), run(unwatchedName, "--watch-dirs", "0")
}

package main

import (
	"context"
	"fmt"
	"time"
)

// watchSamples is how many times each 10,000-file command runs.
const watchSamples = 20

// writeTenThousand writes 10,000 small files into a new directory: a
// build's or an install's burst, in the shell the bench image has.
const writeTenThousand = `rm -rf burst && mkdir burst && i=0; while [ $i -lt 10000 ]; do echo x > burst/f$i; i=$((i+1)); done`

// measureWatchCost runs a command that writes 10,000 files in a session
// whose workspace is watched (the default), and, as the baseline, in one
// started with --watch-dirs 0, so the watch's cost to the command shows.
// The two sessions take turns, so a drift of the machine's speed falls on
// both alike.
func measureWatchCost(ctx context.Context, cfg config) (watched, unwatched measurement) {
	watchedName := "podman_shell writing 10,000 files, workspace watched"
	unwatchedName := "baseline: the same, --watch-dirs 0"
	open := func(extra ...string) (*session, error) {
		s, err := startSessionIn(ctx, cfg, "", extra...)
		if err != nil {
			return nil, err
		}
		if err := s.prepare(ctx); err != nil {
			s.close()
			return nil, fmt.Errorf("preparing: %w", err)
		}
		return s, nil
	}
	on, err := open()
	if err != nil {
		return failed(watchedName, err), failed(unwatchedName, err)
	}
	defer on.close()
	off, err := open("--watch-dirs", "0")
	if err != nil {
		return failed(watchedName, err), failed(unwatchedName, err)
	}
	defer off.close()
	var times [2][]time.Duration
	var errs [2]int
	for range watchSamples {
		for i, s := range []*session{on, off} {
			start := time.Now()
			if err := s.expect(ctx, "podman_shell", map[string]any{"command": []string{"sh", "-c", writeTenThousand}, "timeout_seconds": 120}); err != nil {
				errs[i]++
				continue
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	watched, unwatched = summarize(watchedName, times[0]), summarize(unwatchedName, times[1])
	watched.Errors, unwatched.Errors = errs[0], errs[1]
	return watched, unwatched
}

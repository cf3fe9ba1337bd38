package main

import (
	"context"
	"fmt"
	"time"
)

// stormPairs is how many read_file and write_file pairs each session makes
// during a rename storm.
const stormPairs = 200

// renameStorm swaps a directory for a link and back in a loop
// (TestReliabilityEscapes' race) until the file stop appears, writing
// .storm-running once it runs and /tmp/storm-done at its end; it gives up
// after 100,000 rounds.
const renameStorm = `rm -rf d realdir stop /tmp/storm-done; mkdir -p d/sub && echo x > d/f && mv d realdir; i=0;
while [ ! -e stop ] && [ $i -lt 100000 ]; do ln -s /tmp d; rm d; mv realdir d; mv d realdir; [ $i -eq 0 ] && echo x > .storm-running; i=$((i+1)); done;
rm -f .storm-running; echo $i > /tmp/storm-done`

// measureStormCalls times read_file and write_file while a background job
// renames a directory in a tight loop, in a session whose workspace is
// watched and, as the baseline, in one started with --watch-dirs 0: what
// the watch's handling of a storm of events costs a file call.
func measureStormCalls(ctx context.Context, cfg config) (watched, unwatched measurement) {
	watchedName := "read_file and write_file during a rename storm, workspace watched"
	unwatchedName := "baseline: the same calls and storm, --watch-dirs 0"
	var rows [2]measurement
	for i, extra := range [][]string{nil, {"--watch-dirs", "0"}} {
		name := []string{watchedName, unwatchedName}[i]
		s, err := startSessionIn(ctx, cfg, "", extra...)
		if err != nil {
			rows[i] = failed(name, err)
			continue
		}
		rows[i] = stormCalls(ctx, s, name)
		s.close()
	}
	return rows[0], rows[1]
}

// stormCalls runs the storm in s and times stormPairs pairs of calls.
func stormCalls(ctx context.Context, s *session, name string) measurement {
	if err := s.prepare(ctx); err != nil {
		return failed(name, fmt.Errorf("preparing: %w", err))
	}
	if err := s.expect(ctx, "podman_shell", map[string]any{"command": []string{"sh", "-c", renameStorm}, "background": true}); err != nil {
		return failed(name, fmt.Errorf("starting the storm: %w", err))
	}
	for deadline := time.Now().Add(time.Minute); s.expect(ctx, "read_file", map[string]any{"file_path": ".storm-running"}) != nil; {
		if time.Now().After(deadline) {
			return failed(name, fmt.Errorf("the storm did not start within a minute"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	var times []time.Duration
	errs := 0
	for i := range stormPairs {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"file_path": "bench/read.txt"}},
			{"write_file", map[string]any{"file_path": "storm-out.txt", "content": fmt.Sprint(i)}},
		} {
			start := time.Now()
			if err := s.expect(ctx, c.tool, c.args); err != nil {
				errs++
				continue
			}
			times = append(times, time.Since(start))
		}
	}
	m := summarize(name, times)
	m.Errors = errs
	if err := s.expect(ctx, "write_file", map[string]any{"file_path": "stop", "content": ""}); err != nil {
		m.Errors++
	}
	if err := s.expect(ctx, "podman_shell", map[string]any{"command": []string{"sh", "-c", "while [ ! -e /tmp/storm-done ]; do sleep 0.1; done"}, "timeout_seconds": 120}); err != nil {
		m.Errors++
	}
	return m
}

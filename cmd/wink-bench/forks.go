package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// The fork measurement: a workspace of 10,000 files / 100 MB (the
// checkpoint measurement's tree) forked forkCount times, each fork claimed
// by a session of its own (another process, as an orchestrator's workers
// are) and ready when that session's first call has answered.
const (
	forkCount  = 10
	forkRounds = 3
)

// measureForks times, in forkRounds rounds: workspace_fork of forkCount
// forks, then each claimed (workspace_attach) and its first call made, all
// at once, the total from the fork call to the last first call's answer;
// the fork call alone; and the source's read_file while the forks are
// claimed and start, against the same read_file with nothing else to do,
// in the same run. The claimers are started before the round, untimed
// (--lazy: their own empty workspaces would be discarded by the claim).
func measureForks(ctx context.Context, cfg config) []measurement {
	totalName := fmt.Sprintf("fork: %d forks of 10,000 files / 100 MB, each ready for its first call in another session", forkCount)
	callName := fmt.Sprintf("fork: the workspace_fork call alone (%d forks)", forkCount)
	busyName := "fork: the source's read_file 4 KiB while the forks are claimed and start"
	idleName := "fork: the source's read_file 4 KiB, nothing else running (same run)"
	fail := func(err error) []measurement {
		return []measurement{failed(totalName, err), failed(callName, err), failed(busyName, err), failed(idleName, err)}
	}
	cache, err := os.MkdirTemp("", "wink-bench-forks-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(cache)
	src, err := startSessionIn(ctx, cfg, cache)
	if err != nil {
		return fail(err)
	}
	defer src.close()
	if err := src.expect(ctx, "podman_shell", map[string]any{"command": []string{"python3", "-c", makeTree}, "timeout_seconds": 300}); err != nil {
		return fail(err)
	}
	if err := src.expect(ctx, "write_file", map[string]any{"file_path": "bench/read.txt", "content": fourKiB}); err != nil {
		return fail(err)
	}
	read := func() error { return src.expect(ctx, "read_file", map[string]any{"file_path": "bench/read.txt"}) }
	idle := measure(idleName, 200, func(int) error { return read() })
	var totals, calls, busy []time.Duration
	errs := 0
	for round := range forkRounds {
		claimers := make([]*session, forkCount)
		for i := range claimers {
			if claimers[i], err = startSessionIn(ctx, cfg, cache, "--lazy"); err != nil {
				return fail(err)
			}
		}
		start := time.Now()
		handles, err := src.fork(ctx, forkCount)
		calls = append(calls, time.Since(start))
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: round %d: %v\n", totalName, round, err)
			errs++
			closeAll(claimers)
			continue
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var claimErr error
		for i, c := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.expect(ctx, "workspace_attach", map[string]any{"handle": handles[i]})
				if err == nil {
					err = c.expect(ctx, "read_file", map[string]any{"file_path": "bench/read.txt"})
				}
				if err != nil {
					mu.Lock()
					claimErr = errors.Join(claimErr, err)
					mu.Unlock()
				}
			}()
		}
		go func() { wg.Wait(); close(done) }()
		for waiting := true; waiting; {
			select {
			case <-done:
				waiting = false
			default:
				t := time.Now()
				if err := read(); err != nil {
					errs++
				}
				busy = append(busy, time.Since(t))
			}
		}
		total := time.Since(start)
		if claimErr != nil {
			fmt.Fprintf(os.Stderr, "%s: round %d: %v\n", totalName, round, claimErr)
			errs++
		} else {
			totals = append(totals, total)
		}
		closeAll(claimers)
	}
	total := summarize(totalName, totals)
	total.Errors, total.Target = errs, "≤ 3000 ms"
	total.Met = errs == 0 && len(totals) > 0 && total.P50 <= 3000
	return []measurement{total, summarize(callName, calls), summarize(busyName, busy), idle}
}

// fork calls workspace_fork and returns the forks' handles.
func (s *session) fork(ctx context.Context, count int) ([]string, error) {
	a, err := s.call(ctx, "workspace_fork", map[string]any{"count": count})
	if err == nil && a.Result.IsError {
		err = fmt.Errorf("workspace_fork: %s", a.Result.Content[0].Text)
	}
	var r struct {
		Forks []struct {
			Handle string `json:"handle"`
		} `json:"forks"`
	}
	if err == nil {
		err = json.Unmarshal(a.Result.StructuredContent, &r)
	}
	if err == nil && len(r.Forks) != count {
		err = fmt.Errorf("workspace_fork gave %d forks, not %d", len(r.Forks), count)
	}
	handles := make([]string, len(r.Forks))
	for i, f := range r.Forks {
		handles[i] = f.Handle
	}
	return handles, err
}

// closeAll ends the sessions, at once.
func closeAll(sessions []*session) {
	var wg sync.WaitGroup
	for _, s := range sessions {
		if s != nil {
			wg.Add(1)
			go func() { defer wg.Done(); s.close() }()
		}
	}
	wg.Wait()
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// The checkpoint measurement's workspace: 100 directories of 100 files of
// 10 KiB of random bytes (10,000 files, 100 MB), of which each round
// rewrites 50, spread over the directories.
const (
	checkpointRounds = 10
	changedPerRound  = 50
)

// makeTree writes the workspace the checkpoint measurement saves.
const makeTree = `import os
for d in range(100):
    os.makedirs("ckpt/d%02d" % d, exist_ok=True)
    for f in range(100):
        with open("ckpt/d%02d/f%02d" % (d, f), "wb") as out:
            out.write(os.urandom(10240))
`

// changeFiles rewrites 50 of the tree's files, a round's changes.
const changeFiles = `import os, sys
r = int(sys.argv[1])
for i in range(50):
    d, f = (i * 2 + r) % 100, (i * 7 + r * 3) % 100
    with open("ckpt/d%02d/f%02d" % (d, f), "wb") as out:
        out.write(os.urandom(10240))
`

// checkpointFigures are what the checkpoint measurement found of storage.
type checkpointFigures struct {
	// FirstAddedBytes is what the first checkpoint put in the store.
	FirstAddedBytes int64 `json:"first_added_bytes"`
	// LaterAddedBytes is what each of the 2nd-10th checkpoints added.
	LaterAddedBytes []int64 `json:"later_added_bytes"`
	// StoreBytes is the store's size after the 10th.
	StoreBytes int64 `json:"store_bytes"`
}

// measureCheckpoints times, on the workspace image: the first checkpoint
// of a workspace of 10,000 files / 100 MB, each sample in a new process
// with a new cache, as a user's first is; then, in one session, ten
// rounds of 50 files rewritten, a checkpoint, and a restore of the
// checkpoint before (which saves the state it replaces as an automatic
// checkpoint, writes the 50 files back and checks the result).
func measureCheckpoints(ctx context.Context, cfg config) (first, later, restore measurement, figs checkpointFigures) {
	firstName := "checkpoint: the first of a workspace of 10,000 files / 100 MB"
	laterName := "checkpoint: 10,000 files / 100 MB, 50 files changed"
	restoreName := "restore: 10,000 files / 100 MB, back to the checkpoint before (50 files differ)"
	fail := func(err error) (measurement, measurement, measurement, checkpointFigures) {
		return failed(firstName, err), failed(laterName, err), failed(restoreName, err), figs
	}
	var s *session
	newTree := func() (err error) {
		if s, err = startSession(ctx, cfg); err == nil {
			err = s.expect(ctx, "podman_shell", map[string]any{"command": []string{"python3", "-c", makeTree}, "timeout_seconds": 300})
		}
		// A model's next call comes seconds later; files changed within a
		// second of a checkpoint are read again by the next (racyWindow).
		time.Sleep(2 * time.Second)
		return err
	}
	var firsts []time.Duration
	for range 3 {
		if err := newTree(); err != nil {
			return fail(err)
		}
		start := time.Now()
		cp, err := s.checkpoint(ctx)
		if err != nil {
			return fail(err)
		}
		firsts = append(firsts, time.Since(start))
		figs.FirstAddedBytes = cp.AddedBytes
		s.close()
	}
	first = summarize(firstName, firsts)
	if err := newTree(); err != nil {
		return fail(err)
	}
	defer s.close()
	prev, err := s.checkpoint(ctx)
	if err != nil {
		return fail(err)
	}
	var saves, restores []time.Duration
	errors := 0
	for round := range checkpointRounds - 1 {
		if err := s.expect(ctx, "podman_shell", map[string]any{"command": []string{"python3", "-c", changeFiles, fmt.Sprint(round)}}); err != nil {
			return fail(err)
		}
		time.Sleep(2 * time.Second)
		start := time.Now()
		cp, err := s.checkpoint(ctx)
		if err != nil {
			errors++
			fmt.Fprintf(os.Stderr, "%s: %v\n", laterName, err)
			continue
		}
		saves = append(saves, time.Since(start))
		figs.LaterAddedBytes = append(figs.LaterAddedBytes, cp.AddedBytes)
		start = time.Now()
		if err := s.expect(ctx, "workspace_restore", map[string]any{"checkpoint": prev.ID}); err != nil {
			errors++
			fmt.Fprintf(os.Stderr, "%s: %v\n", restoreName, err)
			continue
		}
		restores = append(restores, time.Since(start))
		prev = cp
	}
	later, restore = summarize(laterName, saves), summarize(restoreName, restores)
	later.Errors, restore.Errors = errors, errors
	var list struct {
		StoreBytes int64 `json:"store_bytes"`
	}
	if a, err := s.call(ctx, "workspace_checkpoints", nil); err == nil && !a.Result.IsError {
		_ = json.Unmarshal(a.Result.StructuredContent, &list)
	}
	figs.StoreBytes = list.StoreBytes
	return first, later, restore, figs
}

// checkpoint takes a checkpoint of the session's workspace.
func (s *session) checkpoint(ctx context.Context) (workspaceCheckpoint, error) {
	var cp struct {
		Checkpoint workspaceCheckpoint `json:"checkpoint"`
	}
	a, err := s.call(ctx, "workspace_checkpoint", nil)
	if err == nil && a.Result.IsError {
		err = fmt.Errorf("workspace_checkpoint: %s", a.Result.Content[0].Text)
	}
	if err == nil {
		err = json.Unmarshal(a.Result.StructuredContent, &cp)
	}
	return cp.Checkpoint, err
}

// workspaceCheckpoint is what the measurement reads of a checkpoint.
type workspaceCheckpoint struct {
	ID         string `json:"id"`
	AddedBytes int64  `json:"added_bytes"`
}

package workspace

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

func TestGateOrdersCallsAroundCheckpointsAndRestores(t *testing.T) {
	g := newGate()
	// A call waiting behind a checkpoint ends with its context.
	unlock, err := g.lockFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := g.enter(waiting, wire.OpRead); err == nil {
		t.Fatal("a read went past a checkpoint")
	}
	// Commands do not wait for a checkpoint.
	_, leave, err := g.enter(ctx, wire.OpExec)
	if err != nil {
		t.Fatalf("a command waited for a checkpoint: %v", err)
	}
	leave()
	unlock()

	// A restore cancels the commands in flight, and waits for them.
	cmdCtx, leaveCmd, err := g.enter(ctx, wire.OpExec)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-cmdCtx.Done()
		time.Sleep(20 * time.Millisecond) // its tree dying
		leaveCmd()
	}()
	unlockAll, stopped, err := g.lockAll(ctx)
	if err != nil || stopped != 1 || !errors.Is(context.Cause(cmdCtx), ErrStoppedForRestore) {
		t.Fatalf("lockAll = %d stopped, %v; the command's cause %v", stopped, err, context.Cause(cmdCtx))
	}
	// While it holds the gate, nothing else starts, and a waiter can give up.
	for _, op := range []string{wire.OpWrite, wire.OpExec, wire.OpPython, wire.OpJobStart} {
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		if _, _, err := g.enter(short, op); err == nil {
			t.Errorf("%s went past a restore", op)
		}
		cancel()
	}
	// A job query is never held up.
	if _, leave, err := g.enter(ctx, wire.OpJobStatus); err != nil {
		t.Errorf("a job query waited: %v", err)
	} else {
		leave()
	}
	unlockAll()
	if _, leave, err := g.enter(ctx, wire.OpWrite); err != nil {
		t.Errorf("a write after the restore: %v", err)
	} else {
		leave()
	}
}

package server

import (
	"context"
	"strings"
	"testing"
)

func TestTaskCountsBoundEachSession(t *testing.T) {
	var tc taskCounts
	for range MaxTasksPerSession {
		if err := tc.reserve("a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tc.reserve("a"); err == nil || !strings.Contains(err.Error(), "the most allowed") {
		t.Errorf("task %d of one session: %v, want the limit named", MaxTasksPerSession+1, err)
	}
	if err := tc.reserve("b"); err != nil {
		t.Errorf("another session was refused: %v", err)
	}
	tc.created("t1", "a")
	ctx, cancel := context.WithCancel(context.Background())
	tc.running("t1", cancel)
	tc.ended("t1")
	tc.ended("t1") // a second terminal hook releases nothing more
	if ctx.Err() == nil {
		t.Error("the ended task's work was not stopped")
	}
	if err := tc.reserve("a"); err != nil {
		t.Errorf("after a task ended: %v", err)
	}
	if err := tc.reserve("a"); err == nil {
		t.Error("one ended task released two places")
	}
	late, stop := context.WithCancel(context.Background())
	defer stop()
	tc.running("gone", func() { stop() }) // cancelled before its work began
	if late.Err() == nil {
		t.Error("the work of a task that had already ended was not stopped")
	}
}

// Package steps times the steps of a long operation (making a container,
// saving a checkpoint), so that its log line breaks the time down step by
// step: "create=120ms start=40ms connect=3ms".
package steps

import (
	"fmt"
	"strings"
	"time"
)

// Times records how long each step took. It is not safe for concurrent
// use: one operation's goroutine owns it.
type Times struct {
	last  time.Time
	parts []string
}

// Start begins timing; the first step begins now.
func Start() *Times { return &Times{last: time.Now()} }

// Done ends the step named step, which began when the previous one ended.
func (t *Times) Done(step string) {
	now := time.Now()
	t.parts = append(t.parts, fmt.Sprintf("%s=%dms", step, now.Sub(t.last).Milliseconds()))
	t.last = now
}

// String lists the steps in order, each with its milliseconds.
func (t *Times) String() string { return strings.Join(t.parts, " ") }

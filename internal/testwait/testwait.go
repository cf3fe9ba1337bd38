// Package testwait waits, in a test, for a state the code under test
// reaches on its own goroutines: it polls a condition instead of sleeping
// and hoping, and fails the test, naming what it waited for, when the
// state does not come.
package testwait

import (
	"testing"
	"time"
)

// Limit is how long For waits: long enough for a 2-core machine busy with
// every other package's tests, so that only a state that never comes
// fails.
const Limit = 20 * time.Second

// For polls cond every few milliseconds until it holds, and fails the test
// with "timed out waiting for WHAT" after Limit.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(Limit); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

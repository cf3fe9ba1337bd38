package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var ready atomic.Bool
	time.AfterFunc(20*time.Millisecond, func() { ready.Store(true) })
	For(t, "the flag", ready.Load)
	if !ready.Load() {
		t.Fatal("For returned before its condition held")
	}
}

package engine

import (
	"errors"
	"fmt"
	"testing"
)

func TestWordedSaysItsWordsAndIsItsSentinel(t *testing.T) {
	err := fmt.Errorf("%w (tried x). Start it", Worded(ErrUnreachable, "cannot reach the Example service"))
	if got, want := err.Error(), "cannot reach the Example service (tried x). Start it"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrSlow) {
		t.Errorf("errors.Is: ErrUnreachable %v, ErrSlow %v; want true, false", errors.Is(err, ErrUnreachable), errors.Is(err, ErrSlow))
	}
}

package checkpoints

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Budget bounds what a store holds together with other stores, beside
// its own cap: a client's quota on the checkpoints of all its workspaces
// (quota.StoreAccount). A store charged to a budget takes every byte of
// an object from it before writing it, as it reserves the byte against
// its cap, and gives back what it frees, so that a refused checkpoint
// leaves nothing written and nothing counted.
type Budget interface {
	// Take counts n more bytes, or refuses them with an error saying why.
	Take(n int64) error
	// Give gives back n bytes; a negative n counts -n more, unchecked.
	Give(n int64)
	// Set counts n bytes in place of what was counted.
	Set(n int64)
	// Close gives back all and stops counting: the store goes.
	Close()
}

// ErrOverBudget means a checkpoint would take its store's budget past
// its limit; errors.Is counts it an ErrOverCap too, and the error says
// which limit and what to do.
var ErrOverBudget error = overBudget{}

// overBudget is a refusal of the store's budget, wrapping the budget's
// own error.
type overBudget struct{ err error }

func (o overBudget) Error() string {
	if o.err == nil {
		return "the checkpoint budget is spent"
	}
	return o.err.Error()
}

func (o overBudget) Unwrap() error { return o.err }

// Is makes an overBudget both ErrOverBudget and ErrOverCap.
func (overBudget) Is(target error) bool { return target == ErrOverBudget || target == ErrOverCap }

// ChargeTo has the store count what it holds, now and from now on,
// against b, and returns b for its owner to Close when the store goes.
// What the store holds already is counted at once, unchecked (it is on
// disk). Call it before the store is shared: the charge is not locked.
func (s *Store) ChargeTo(b Budget) Budget {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.charge.budget = b
	b.Set(s.bytes + s.reserved)
	return b
}

// Measure returns what the store in dir holds, as Open would count it,
// changing nothing (another process may own it); 0 when there is none.
func Measure(dir string) (int64, error) {
	if _, err := os.Stat(filepath.Join(dir, objectsDir)); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return Look(dir).measure()
}

// charge is what a store is charged to beside its cap, if anything: set
// once by ChargeTo before the store is shared, then only read.
type charge struct{ budget Budget }

// take takes n bytes from the budget; the store's lock is not held (a
// refusal is counted and audited by the budget's owner).
func (c *charge) take(n int64) error {
	if c.budget == nil {
		return nil
	}
	if err := c.budget.Take(n); err != nil {
		return overBudget{err}
	}
	return nil
}

// give gives n bytes back to the budget.
func (c *charge) give(n int64) {
	if c.budget != nil && n != 0 {
		c.budget.Give(n)
	}
}

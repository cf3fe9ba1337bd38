package quota

import "sync"

// A principal's checkpoint bytes are what the checkpoint stores of its
// workspaces hold: each store's objects, content-addressed and shared by
// its checkpoints, counted once. A checkpoint therefore costs the new
// bytes it adds to its store, and deleting one gives back what its
// store's collection frees. Each store has a StoreAccount, found again by
// the same key (its directory), so a store that is opened again (a kept
// workspace's next session) replaces its count instead of adding to it.

// storeKey names one checkpoint store of one principal.
type storeKey struct{ principal, store string }

// StoreAccount counts one checkpoint store's bytes against its
// principal's CheckpointBytes quota. A nil *StoreAccount (no quota)
// counts nothing and refuses nothing; so does one that is closed.
type StoreAccount struct {
	ledger *Ledger
	key    storeKey
	bytes  int64 // guarded by ledger.mu
	closed bool  // guarded by ledger.mu
	once   sync.Once
}

// Checkpoints returns the account of principal's checkpoint store named
// store (its directory), the same until it is closed, or nil when there
// is no checkpoint quota.
func (l *Ledger) Checkpoints(principal, store string) *StoreAccount {
	if l == nil || l.limits.CheckpointBytes <= 0 {
		return nil
	}
	k := storeKey{principal, store}
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.stores[k]
	if !ok {
		a = &StoreAccount{ledger: l, key: k}
		l.stores[k] = a
	}
	return a
}

// Take counts n more bytes about to be written to the store, or refuses
// them, taking nothing, with an *ExceededError when the principal's
// stores would hold more than the quota (told to the OnRefused hook).
func (a *StoreAccount) Take(n int64) error {
	if err := a.change(n, true); err != nil {
		return a.refuse(err)
	}
	return nil
}

// Give gives back n bytes the store no longer holds (objects collected,
// a reservation not written). A negative n counts -n more without a
// check: bytes already written (a pack's index beyond its reservation).
func (a *StoreAccount) Give(n int64) { _ = a.change(-n, false) }

// Set counts n bytes for the store in place of what the account counted:
// what it was found to hold on disk when opened. It is not checked: the
// bytes are there, and they count, so that the principal's next
// checkpoint is refused until it deletes some.
func (a *StoreAccount) Set(n int64) {
	if a == nil {
		return
	}
	l := a.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if !a.closed {
		l.addLocked(a.key.principal, n-a.bytes)
		a.bytes = n
	}
}

// Close gives back everything the store counted and forgets it: its
// workspace ended and its store is deleted. Later calls count nothing;
// Checkpoints makes a new account for the same key.
func (a *StoreAccount) Close() {
	if a == nil {
		return
	}
	a.once.Do(func() {
		l := a.ledger
		l.mu.Lock()
		defer l.mu.Unlock()
		l.addLocked(a.key.principal, -a.bytes)
		a.bytes, a.closed = 0, true
		if l.stores[a.key] == a {
			delete(l.stores, a.key)
		}
	})
}

// change adds n to the store's count; with check, not when it would take
// the principal past the quota.
func (a *StoreAccount) change(n int64, check bool) *ExceededError {
	if a == nil || n == 0 {
		return nil
	}
	l := a.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.closed {
		return nil
	}
	held := l.used[a.key.principal][CheckpointBytes]
	if check && n > 0 && held+n > l.limits.CheckpointBytes {
		return &ExceededError{Resource: CheckpointBytes, Limit: l.limits.CheckpointBytes, InUse: held, Asked: n}
	}
	l.addLocked(a.key.principal, n)
	a.bytes += n
	return nil
}

// refuse tells the OnRefused hook of err, outside the lock.
func (a *StoreAccount) refuse(err *ExceededError) error {
	if f := a.ledger.refused; f != nil {
		f(a.key.principal, CheckpointBytes)
	}
	return err
}

// addLocked adds n to principal's checkpoint bytes; l.mu is held.
func (l *Ledger) addLocked(principal string, n int64) {
	held := l.used[principal]
	if held == nil {
		held = Amounts{}
		l.used[principal] = held
	}
	held[CheckpointBytes] += n
	if held[CheckpointBytes] == 0 {
		delete(held, CheckpointBytes)
	}
	if len(held) == 0 {
		delete(l.used, principal)
	}
}

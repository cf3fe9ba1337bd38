//go:build !linux

package workspace

// exitingHolder returns 0: only Linux says who holds a lock.
func exitingHolder(string) int { return 0 }

//go:build !linux

package workspace

// mountKeptDisks mounts nothing: no session here had a disk.
func mountKeptDisks(string) ([]string, map[string]error) { return nil, nil }

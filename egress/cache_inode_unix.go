//go:build unix

package egress

import (
	"os"
	"syscall"
)

// inode is info's inode number: a file replaced by another of the same
// size and time is still told apart.
func inode(info os.FileInfo) uint64 {
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Ino)
	}
	return 0
}

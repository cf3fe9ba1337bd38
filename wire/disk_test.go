package wire

import "testing"

// TestFullIsLessThanAWriteOrNoInode: a disk counts as full under 1 MiB
// free, or a 32nd of a small one, or with no inode left, and not before.
func TestFullIsLessThanAWriteOrNoInode(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		d    DiskSpace
		want bool
	}{
		{"2 GiB with 440 KiB free", DiskSpace{TotalBytes: 2048 * mib, FreeBytes: 440 << 10, FreeFiles: 10, TotalFiles: 100}, true},
		{"2 GiB with 2 MiB free", DiskSpace{TotalBytes: 2048 * mib, FreeBytes: 2 * mib, FreeFiles: 10, TotalFiles: 100}, false},
		{"1 MiB /tmp, empty", DiskSpace{TotalBytes: mib, FreeBytes: mib, FreeFiles: 10, TotalFiles: 100}, false},
		{"1 MiB /tmp with 64 KiB free", DiskSpace{TotalBytes: mib, FreeBytes: 64 << 10, FreeFiles: 10, TotalFiles: 100}, false},
		{"1 MiB /tmp with 16 KiB free", DiskSpace{TotalBytes: mib, FreeBytes: 16 << 10, FreeFiles: 10, TotalFiles: 100}, true},
		{"no inode left", DiskSpace{TotalBytes: 64 * mib, FreeBytes: 50 * mib, FreeFiles: 0, TotalFiles: 100}, true},
		{"no inode limit", DiskSpace{TotalBytes: 64 * mib, FreeBytes: 50 * mib, FreeFiles: 0, TotalFiles: 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.d.Full(); got != tt.want {
				t.Errorf("Full() = %v, want %v", got, tt.want)
			}
		})
	}
}

//go:build !linux

package doctor

import (
	"fmt"
	"runtime"
)

// Off Linux the server's host is not where containers run: its cgroups
// and limits say nothing about them, and the container check tries them.

func (localHost) cgroupLayout() string { return cgroupsUnknown }

func (localHost) hardLimits() (nofile, nproc uint64, err error) {
	return 0, 0, fmt.Errorf("not read on %s", runtime.GOOS)
}

func (localHost) freeBytes(string) (uint64, error) {
	return 0, fmt.Errorf("not read on %s", runtime.GOOS)
}

func (localHost) inotifyLimits() (uint64, uint64, error) {
	return 0, 0, fmt.Errorf("not read on %s", runtime.GOOS)
}

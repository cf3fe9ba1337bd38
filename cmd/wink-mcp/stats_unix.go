//go:build unix

package main

import (
	"os"
	"syscall"
)

// statsSignal asks the server to log its runtime stats.
var statsSignal os.Signal = syscall.SIGUSR1

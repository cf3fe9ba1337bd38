package main

import "os"

// statsSignal is nil: Windows has no signal to spare for the stats.
var statsSignal os.Signal

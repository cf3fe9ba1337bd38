package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
)

// logStatsOnSignal logs the server's goroutines, live heap and open files
// each time it gets SIGUSR1, until ctx ends: a look at a long-running
// server's health without a debug endpoint (the reliability suite's soak
// uses it). The heap is measured after a collection, so two samples compare
// what is kept, not garbage awaiting the next cycle.
func logStatsOnSignal(ctx context.Context, log *slog.Logger) {
	sigs := make(chan os.Signal, 1)
	if statsSignal == nil {
		return
	}
	signal.Notify(sigs, statsSignal)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
			}
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fds, _ := os.ReadDir("/proc/self/fd")
			log.Info("runtime stats", "goroutines", runtime.NumGoroutine(), "live_heap_bytes", m.HeapAlloc, "open_fds", len(fds))
		}
	}()
}

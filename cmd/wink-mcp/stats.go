package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// logStatsOnSignal logs the server's goroutines, heap and open files each
// time it gets SIGUSR1, until ctx ends: a look at a long-running server's
// health without a debug endpoint (the reliability suite's soak uses it).
func logStatsOnSignal(ctx context.Context, log *slog.Logger) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fds, _ := os.ReadDir("/proc/self/fd")
			log.Info("runtime stats", "goroutines", runtime.NumGoroutine(), "heap_bytes", m.HeapAlloc, "open_fds", len(fds))
		}
	}()
}

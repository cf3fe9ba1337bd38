package mcpgoadapt

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestQuietLoggerPassesOnlyWarningsAndErrors(t *testing.T) {
	var out bytes.Buffer
	log := QuietLogger(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, l := range []*slog.Logger{log, log.With("a", 1), log.WithGroup("g")} {
		l.Info("Sweeping expired session", "session", "secret-id")
		l.Debug("debug", "session", "secret-id")
		l.Warn("kept")
		l.Error("kept")
	}
	if strings.Contains(out.String(), "secret-id") || strings.Count(out.String(), "msg=kept") != 6 {
		t.Errorf("the log:\n%s", out.String())
	}
}

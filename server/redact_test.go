package server

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestLogsRedactPassedValues(t *testing.T) {
	var buf strings.Builder
	log := slog.New(RedactingHandler(slog.NewJSONHandler(&buf, nil), map[string]string{"A": "s3cret-value", "B": "s3cret", "C": "ab"}))
	log.Info("printed s3cret-value", "preview", "x=s3cret-value y=s3cret", "err", errors.New("s3cret failed"), slog.Group("g", "v", "s3cret"))
	log.With("with", "s3cret").Info("ab stays")
	out := buf.String()
	if strings.Contains(out, "s3cret") || strings.Count(out, "[redacted]") != 6 || !strings.Contains(out, "ab stays") {
		t.Errorf("log:\n%s\nwant every secret redacted, values shorter than %d kept", out, minRedacted)
	}
}

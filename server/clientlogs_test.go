package server

import (
	"errors"
	"log/slog"
	"testing"
)

func TestJSONValueGivesErrorsTheirMessage(t *testing.T) {
	if got := jsonValue(slog.AnyValue(errors.New("boom"))); got != "boom" {
		t.Errorf("an error became %v", got)
	}
	if got := jsonValue(slog.IntValue(3)); got != int64(3) {
		t.Errorf("an int became %v (%T)", got, got)
	}
}

func TestMCPLevels(t *testing.T) {
	for level, want := range map[slog.Level]string{slog.LevelDebug: "debug", slog.LevelInfo: "info", slog.LevelWarn: "warning", slog.LevelError: "error", slog.LevelError + 4: "error"} {
		if got := string(mcpLevel(level)); got != want {
			t.Errorf("%v -> %s, want %s", level, got, want)
		}
	}
}

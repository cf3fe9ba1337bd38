package mcpgoadapt

import (
	"context"
	"log/slog"
)

// QuietLogger returns the logger to give mcp-go's HTTP transports: it
// passes only warnings and errors on to h, because mcp-go v1.2.1's
// StreamableHTTPServer logs session ids at info level (a sampling answer
// delivered, a session swept), while wink-mcp's own records name a session
// only by a hash, never by the id a client reaches it with.
func QuietLogger(h slog.Handler) *slog.Logger {
	return slog.New(minLevel{Handler: h, min: slog.LevelWarn})
}

// minLevel is a slog.Handler that drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// minRedacted is the shortest value the log redacts: shorter ones would
// blot out ordinary words and numbers.
const minRedacted = 4

// redactHandler writes records with the values of the variables --env-pass
// passes replaced, wherever they appear: a command that prints one puts it
// in its output, whose start the log previews.
type redactHandler struct {
	slog.Handler
	secrets *strings.Replacer
}

// RedactingHandler wraps h so that its records never hold the values of
// secrets (the variables --env-pass passes); h itself when there are none
// long enough to redact.
func RedactingHandler(h slog.Handler, secrets map[string]string) slog.Handler {
	r := newRedactor(secrets)
	if r == nil {
		return h
	}
	return &redactHandler{Handler: h, secrets: r}
}

// newRedactor replaces the values of secrets; nil when there are none
// long enough to redact.
func newRedactor(secrets map[string]string) *strings.Replacer {
	var values []string
	for _, v := range secrets {
		if len(v) >= minRedacted {
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return nil
	}
	// Longest first, so that a secret holding another is replaced whole.
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, "[redacted]")
	}
	return strings.NewReplacer(pairs...)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.secrets.Replace(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr { return redactAttr(h.secrets, a) }

// redactAttr is a with the values of secrets replaced in its strings.
func redactAttr(secrets *strings.Replacer, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, secrets.Replace(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, 0, len(attrs))
		for _, g := range attrs {
			out = append(out, redactAttr(secrets, g))
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		return slog.String(a.Key, secrets.Replace(fmt.Sprint(v.Any())))
	}
	return a
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &redactHandler{Handler: h.Handler.WithAttrs(red), secrets: h.secrets}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{Handler: h.Handler.WithGroup(name), secrets: h.secrets}
}

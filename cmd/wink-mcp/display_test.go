package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/workspace"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

// hostile is text a model (or what its commands download) can write to
// forge a line or rewrite the terminal of the person reading a listing.
const hostile = "x\n  c9    2026-01-01T00:00:00Z  forged\r\x1b[2K\x1b[31mred\u009b2J\u202eevil\u200b\xff"

// Every CLI printer that shows model-written text (a checkpoint message,
// a path, a setup command's output, a description) quotes it.
func TestPrintersQuoteModelWrittenText(t *testing.T) {
	t.Parallel()
	printers := []struct {
		name  string
		print func(w io.Writer)
	}{
		{"workspaces show", func(w io.Writer) {
			printKept(w, workspace.KeptWorkspace{Checkpoints: []checkpoints.Checkpoint{{ID: "c1", Message: hostile}, {ID: "c2", Message: "fine"}}})
		}},
		{"profiles list", func(w io.Writer) {
			writeProfiles(w, []images.ProfileImage{{Profile: "node", Description: hostile, Base: "base"}})
		}},
		{"profiles build", func(w io.Writer) { printProgress(w, "node", workspace.Progress{Line: hostile}) }},
		{"export", func(w io.Writer) { printLeftOut(w, []string{hostile + " (binary)"}) }},
	}
	for _, p := range printers {
		t.Run(p.name, func(t *testing.T) {
			var b bytes.Buffer
			p.print(&b)
			out := b.String()
			if strings.ContainsAny(out, "\r\x1b\u009b\u202e\u200b") || strings.Contains(out, "\n  c9") || !strings.Contains(out, `\u202e`) {
				t.Errorf("printed model-written text raw:\n%s", out)
			}
		})
	}
}

package server

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestOnlyAWellFormedTraceparentIsTaken(t *testing.T) {
	good := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for value, want := range map[any]string{
		good:                         good,
		"00-XYZ-00f067aa0ba902b7-01": "",
		good + "\nforged=1":          "",
		42:                           "",
	} {
		var req mcp.CallToolRequest
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": value}}
		if got := traceparentOf(req); got != want {
			t.Errorf("traceparent %q: got %q, want %q", value, got, want)
		}
	}
	if got := traceparentOf(mcp.CallToolRequest{}); got != "" {
		t.Errorf("no _meta: %q", got)
	}
}

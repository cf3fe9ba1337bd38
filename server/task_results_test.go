package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestTaskTTLIsBounded(t *testing.T) {
	s := &Server{cfg: Config{MaxCommandTimeout: 30 * time.Minute}}
	def, limit := (45 * time.Minute).Milliseconds(), (90 * time.Minute).Milliseconds()
	ms := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name  string
		asked *int64
		want  int64
	}{
		{"none", nil, def},
		{"zero", ms(0), def},
		{"negative", ms(-1), def},
		{"short", ms(60_000), 60_000},
		{"ten days", ms((240 * time.Hour).Milliseconds()), limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := mcp.CallToolRequest{}
			req.Params.Task = &mcp.TaskParams{TTL: tc.asked}
			s.boundTaskTTL(t.Context(), nil, &req)
			if got := *req.Params.Task.TTL; got != tc.want {
				t.Errorf("ttl %v -> %d, want %d", tc.asked, got, tc.want)
			}
		})
	}
	plain := mcp.CallToolRequest{}
	s.boundTaskTTL(t.Context(), nil, &plain)
	if plain.Params.Task != nil {
		t.Error("a call without a task got one")
	}
}

// A session keeps its latest MaxHeldTaskResults results whole, drops the
// older ones and all of them at its end, and each dropped result still
// writes out as valid JSON that says why.
func TestTaskResultsAreHeldAndDropped(t *testing.T) {
	var held taskResults
	later := time.Now().Add(time.Hour)
	out := func(i int) *mcp.CallToolResult {
		res := mcp.NewToolResultText(strings.Repeat("x", 100) + string(rune('a'+i%26)))
		res.StructuredContent = map[string]any{"n": i}
		return res
	}
	var results []*mcp.CallToolResult
	for i := range MaxHeldTaskResults + 3 {
		results = append(results, held.hold("s1", out(i), later))
	}
	other := held.hold("s2", out(0), later)
	text := func(r *mcp.CallToolResult) string {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	if got := text(results[0]); !strings.Contains(got, "latest 64 tasks") || strings.Contains(got, `"n":0`) {
		t.Errorf("the oldest result past the cap: %s", got)
	}
	if got := text(results[len(results)-1]); !strings.Contains(got, strings.Repeat("x", 100)) || !strings.Contains(got, `"n":66`) {
		t.Errorf("the latest result: %s", got)
	}
	held.endSession("s1")
	if got := text(results[len(results)-1]); !strings.Contains(got, "its session ended") || strings.Contains(got, "xxxx") {
		t.Errorf("a result after its session ended: %s", got)
	}
	if got := text(other); !strings.Contains(got, strings.Repeat("x", 100)) {
		t.Errorf("another session's result after the first ended: %s", got)
	}
	expired := held.hold("s3", out(1), time.Now().Add(-time.Second))
	held.hold("s3", out(2), later)
	if len(held.bySession["s3"]) != 1 || !strings.Contains(text(expired), "xxxx") {
		t.Errorf("an expired result is forgotten, not dropped: %d held", len(held.bySession["s3"]))
	}
}

package server

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/prompts"
)

func TestCompletionIsCappedAndCounted(t *testing.T) {
	t.Parallel()
	var values []string
	for i := range 150 {
		values = append(values, fmt.Sprintf("f%03d", i))
	}
	values = append(values, "g")
	for _, tc := range []struct {
		name, typed string
		more        bool
		want, total int
		wantMore    bool
		first, last string
	}{
		{"past the cap", "f", false, maxCompletions, 150, true, "f000", "f099"},
		{"under it", "f14", false, 10, 10, false, "f140", "f149"},
		{"under it, but the list was cut", "f14", true, 10, 10, true, "f140", "f149"},
		{"none", "h", false, 0, 0, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := completion(values, tc.typed, tc.more)
			if len(got.Values) != tc.want || got.Total != tc.total || got.HasMore != tc.wantMore || got.Values == nil {
				t.Fatalf("%d values, total %d, hasMore %v; want %d, %d, %v", len(got.Values), got.Total, got.HasMore, tc.want, tc.total, tc.wantMore)
			}
			if tc.want > 0 && (got.Values[0] != tc.first || got.Values[tc.want-1] != tc.last) {
				t.Errorf("values %q...", got.Values[:3])
			}
		})
	}
}

func TestProfileCompletionAnswersOnlyItsArgument(t *testing.T) {
	t.Parallel()
	c := profileCompleter{names: []string{"go", "node", "python"}}
	for _, tc := range []struct {
		prompt, arg, value string
		want               []string
	}{
		{prompts.Name, prompts.ProfileArgument, "", []string{"go", "node", "python"}},
		{prompts.Name, prompts.ProfileArgument, "n", []string{"node"}},
		{prompts.Name, prompts.ProfileArgument, "N", []string{}},
		{prompts.Name, "other", "", []string{}},
		{"another_prompt", prompts.ProfileArgument, "", []string{}},
	} {
		got, err := c.CompletePromptArgument(context.Background(), tc.prompt, mcp.CompleteArgument{Name: tc.arg, Value: tc.value}, mcp.CompleteContext{})
		if err != nil || !slices.Equal(got.Values, tc.want) || got.Values == nil {
			t.Errorf("%s %s %q: %+v %v, want %q", tc.prompt, tc.arg, tc.value, got, err, tc.want)
		}
	}
	if got, _ := (profileCompleter{}).CompletePromptArgument(context.Background(), prompts.Name, mcp.CompleteArgument{Name: prompts.ProfileArgument}, mcp.CompleteContext{}); got.Values == nil || len(got.Values) != 0 {
		t.Errorf("without profiles: %+v", got)
	}
}

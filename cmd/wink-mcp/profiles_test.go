package main

import (
	"strings"
	"testing"
)

func TestProfilesCommandUsage(t *testing.T) {
	t.Setenv("WINK_PROFILES", "")
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"schema"}, 0, `"$schema"`},
		{[]string{"schema", "extra"}, 2, "takes no arguments"},
		{[]string{"nope"}, 2, "unknown command"},
		{[]string{"list", "python"}, 2, "unknown command"},
		{[]string{"list"}, 2, "no profiles file"},
		{nil, 2, "usage: wink-mcp profiles"},
	} {
		var stdout, stderr strings.Builder
		code := runProfiles(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("profiles %q: exit %d, output %q; want %d and %q", tc.args, code, stdout.String()+stderr.String(), tc.code, tc.out)
		}
	}
}

package main

import (
	"os"
	"strings"
	"testing"
)

func TestProfilesCommandUsage(t *testing.T) {
	t.Setenv("WINK_PROFILES", "")
	cache := t.TempDir()
	file := cache + "/profiles.yaml"
	if err := os.WriteFile(file, []byte("profiles:\n  plain:\n    image: debian:bookworm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"schema"}, 0, `"$schema"`},
		{[]string{"schema", "extra"}, 2, "takes no arguments"},
		{[]string{"nope"}, 2, "unknown command"},
		{[]string{"list", "python"}, 2, "unknown command"},
		{[]string{"list", "--no-builtin-profiles"}, 2, "no profiles: pass --profiles FILE"},
		{nil, 2, "usage: wink-mcp profiles"},
		{[]string{"list", "--push", "reg.example/wink"}, 2, "--push goes with profiles build"},
		{[]string{"build", "--push", "reg.example/wink:v1"}, 2, "give the repository without a tag"},
		{[]string{"build", "--profiles", "PROFILES", "--engine", "kubernetes", "--kubernetes-agent-image", "a:1", "--cache-dir", "CACHE"}, 2,
			"profile images are built with Podman, not on the cluster: drop --engine kubernetes"},
	} {
		var stdout, stderr strings.Builder
		for i, arg := range tc.args {
			tc.args[i] = strings.NewReplacer("PROFILES", file, "CACHE", cache).Replace(arg)
		}
		code := runProfiles(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("profiles %q: exit %d, output %q; want %d and %q", tc.args, code, stdout.String()+stderr.String(), tc.code, tc.out)
		}
	}
}

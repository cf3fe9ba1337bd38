package images

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/profiles"
)

// projectProfile is a project profile of a folder holding files.
func projectProfile(t *testing.T, files map[string]string) *profiles.Profile {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &profiles.Profile{Name: "project", FileID: "project:" + dir,
		Build: &profiles.Build{Dir: dir, Dockerfile: "Dockerfile", Context: ".", Found: dir + "/Dockerfile"}}
}

// TestProjectImagesAreRefusedBeforeAnyBuild: a Dockerfile that would
// reach around the allowlist, a context with a link out and an engine
// that cannot build are errors naming why, and nothing is built (the
// room has no engine to touch).
func TestProjectImagesAreRefusedBeforeAnyBuild(t *testing.T) {
	t.Parallel()
	built := false
	builder := func(context.Context, *profiles.Profile, io.Reader, string, string, *Build) error {
		built = true
		return nil
	}
	linked := projectProfile(t, map[string]string{"Dockerfile": "FROM x\n"})
	if err := os.Symlink("/etc/shadow", filepath.Join(linked.Build.Dir, "shadow")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		p       *profiles.Profile
		builder func(context.Context, *profiles.Profile, io.Reader, string, string, *Build) error
		want    string
	}{
		{"ADD of a URL", projectProfile(t, map[string]string{"Dockerfile": "FROM x\nADD http://example.org/a /a\n"}), builder, "Dockerfile line 2: ADD http://example.org/a"},
		{"RUN --network", projectProfile(t, map[string]string{"Dockerfile": "FROM x\nRUN --network=host true\n"}), builder, "RUN --network=host"},
		{"link out", linked, builder, "shadow in the build context is a link to /etc/shadow"},
		{"no builder", projectProfile(t, map[string]string{"Dockerfile": "FROM x\n"}), nil, "this engine cannot build an image from a Dockerfile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRoom(Deps{Log: slog.New(slog.DiscardHandler), BuildProject: tc.builder, BuildLocks: t.TempDir()})
			defer r.Close()
			_, _, err := r.Image(context.Background(), tc.p, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if built {
		t.Error("a refused project was built")
	}
}

// TestProjectKeyFollowsItsInputs: the key changes with the context, the
// Dockerfile, the folder and the build's egress, and with nothing else.
func TestProjectKeyFollowsItsInputs(t *testing.T) {
	t.Parallel()
	p := projectProfile(t, map[string]string{"Dockerfile": "FROM x\n"})
	base := projectKey(p, "ctx")
	if projectKey(p, "ctx") != base {
		t.Fatal("the same inputs gave two keys")
	}
	q := *p
	b := *p.Build
	q.Build = &b
	b.Dockerfile = "other/Dockerfile"
	egress := *p
	egress.Egress.Setup = []string{"deb.example"}
	for name, key := range map[string]string{"context": projectKey(p, "ctx2"), "dockerfile": projectKey(&q, "ctx"), "egress": projectKey(&egress, "ctx")} {
		if key == base {
			t.Errorf("a changed %s kept the key", name)
		}
	}
}

package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// TestPushedImages checks that a room with a pushed repository gives a
// profile with setup commands its pushed image without building (it has
// no engine to build with), keeps a profile without setup on its image,
// and says how to push when the pushed image cannot be had.
func TestPushedImages(t *testing.T) {
	t.Parallel()
	const repo = "registry.example:5000/wink-profiles"
	tools := &profiles.Profile{Name: "tools", FileID: "/etc/wink/profiles.yaml", Image: "debian:bookworm", Setup: []string{"apt-get install -y jq"}}
	plain := &profiles.Profile{Name: "plain", Image: "debian:bookworm"}
	r := NewRoom(Deps{PushedRepository: repo, ImageChoices: []string{"wink-workspace"}, Profiles: &profiles.File{}})
	defer r.Close()
	image, built, err := r.Image(context.Background(), tools, nil)
	if want := repo + ":" + tools.PushTag([]string{"debian:bookworm"}); err != nil || built || image != want {
		t.Errorf("Image(tools) = %q, %v, %v; want %q, false, nil", image, built, err, want)
	}
	if !strings.HasPrefix(image, repo+":tools-") || len(image) != len(repo)+len(":tools-")+32 {
		t.Errorf("pushed image %q: want %s:tools-<32 hex>", image, repo)
	}
	if got := r.knownImage(tools); got.Image != image {
		t.Errorf("knownImage(tools) = %q; want %q", got.Image, image)
	}
	pull := fmt.Errorf("starting Pod: %w: ErrImagePull", engine.ErrImageUnavailable)
	msg := r.ExplainUnpushed(tools, pull).Error()
	for _, want := range []string{`profile "tools"`, image, "wink-mcp profiles build tools --push " + repo} {
		if !strings.Contains(msg, want) {
			t.Errorf("ExplainUnpushed = %q; want it to contain %q", msg, want)
		}
	}
	if err := r.ExplainUnpushed(plain, pull); err != pull {
		t.Errorf("ExplainUnpushed of a profile without setup = %v; want the error as is", err)
	}
	if other := errors.New("quota"); r.ExplainUnpushed(tools, other) != other {
		t.Error("ExplainUnpushed changed an error that is not about the image")
	}
}

// TestPushTagIgnoresTheFilesPath checks that the pushed tag is the same
// for the same profile read from another path, and changes with its
// setup and its base.
func TestPushTagIgnoresTheFilesPath(t *testing.T) {
	t.Parallel()
	a := &profiles.Profile{Name: "tools", FileID: "/a/profiles.yaml", Setup: []string{"true"}}
	b := &profiles.Profile{Name: "tools", FileID: "/b/profiles.yaml", Setup: []string{"true"}}
	c := &profiles.Profile{Name: "tools", FileID: "/a/profiles.yaml", Setup: []string{"false"}}
	base := []string{"img:1"}
	if a.PushTag(base) != b.PushTag(base) {
		t.Error("the tag changed with the file's path")
	}
	if a.PushTag(base) == c.PushTag(base) || a.PushTag(base) == a.PushTag([]string{"img:2"}) {
		t.Error("the tag did not change with the setup or the base")
	}
}

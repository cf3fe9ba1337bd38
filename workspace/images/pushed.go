package images

import (
	"errors"
	"fmt"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// Pushed is the reference of p's image in the registry repository repo, as
// `wink-mcp profiles build --push repo` sends it and a server whose engine
// cannot build (Deps.PushedRepository) runs it: repo tagged with
// p.PushTag of its base as configured (its image, else imageChoices).
func Pushed(repo string, p *profiles.Profile, imageChoices []string) string {
	return repo + ":" + p.PushTag(baseChoices(imageChoices, p))
}

// pushed is the pushed image of p when sessions run pushed images and p
// has setup commands; ok is false otherwise.
func (r *Room) pushed(p *profiles.Profile) (image string, ok bool) {
	if r.deps.PushedRepository == "" || p == nil || len(p.Setup) == 0 {
		return "", false
	}
	return Pushed(r.deps.PushedRepository, p, r.deps.ImageChoices), true
}

// ExplainUnpushed adds to err, the failure of a container of profile p
// (nil for none), how to push p's image when err says the image could not
// be had and p's sessions run its pushed image: the likeliest cause is that
// it was never pushed, or pushed from other settings.
func (r *Room) ExplainUnpushed(p *profiles.Profile, err error) error {
	image, ok := r.pushed(p)
	if !ok || !errors.Is(err, engine.ErrImageUnavailable) {
		return err
	}
	return fmt.Errorf("%w; profile %q runs its image pushed to the registry, %s, which the cluster cannot pull: "+
		"build and push it with `wink-mcp profiles build %s --push %s --profiles FILE` on a machine with Podman, "+
		"with the same profiles file and --image as this server", err, p.Name, image, p.Name, r.deps.PushedRepository)
}

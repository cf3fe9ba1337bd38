// Package images keeps the images sessions start from: the profile
// images a profile's setup builds (their names, labels, look-up and
// pruning), the builds in progress in this process (Builds), and the
// images this process last found for each profile (Known), what a
// setup's egress proxy refused (SetupRefusals), and the references of the
// images pushed to a registry for an engine that cannot build (Pushed). A Room holds a server's
// builds and known images, builds a profile's image under a lock across
// processes, and says which image a session runs or will run. It reaches
// the engine and the sessions only through what it is given (Deps),
// never by importing workspace, which runs a setup's commands in a
// session of its own.
//
// Its locks are leaves: Builds.mu (the builds in progress), a build's
// status line (Build.status), Known.mu and SetupRefusals.mu; none is held
// while another lock is taken. A Room calls its Deps (whose setup and
// look-up of a session take the session's and the manager's locks)
// holding none of them.
package images

import (
	"context"
	"log/slog"
	"slices"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// A profile with setup commands runs them once, in a container from its
// base image, and commits the result as an image that its sessions start
// from. The image's tag and labels carry the profile's image key: a hash of
// every input (profiles.Profile.ImageKey), so a changed input builds anew
// and an unchanged one never does. Concurrent first sessions of a profile
// wait for one build: in this process through Builds, across processes
// through a lock file per key.

// ProfileImageRepo names the images profiles' setups build.
const ProfileImageRepo = "localhost/wink-profile"

// Labels of a profile's image.
const (
	LabelProfile     = "io.wink-mcp.profile"
	LabelProfileKey  = "io.wink-mcp.profile-key"
	LabelProfileBase = "io.wink-mcp.profile-base"
	// LabelProfileFile is the identity of the profiles file the image's
	// profile comes from (profiles.Profile.FileID): only that file's
	// builds and prunes remove it.
	LabelProfileFile = "io.wink-mcp.profile-file"
)

// Name is the tag of p's image of key.
func Name(p *profiles.Profile, key string) string {
	return ProfileImageRepo + ":" + p.Name + "-" + key[:32]
}

// Find finds p's image of key on eng: labelled with the whole key and
// tagged with its name. An image built FROM it inherits the label, but
// not the tag, so it is never taken for it.
func Find(ctx context.Context, eng engine.Engine, p *profiles.Profile, key string) (engine.Image, bool, error) {
	found, err := eng.Images(ctx, LabelProfileKey+"="+key)
	if err != nil {
		return engine.Image{}, false, err
	}
	name := Name(p, key)
	for _, img := range found {
		if slices.Contains(img.Names, name) {
			return img, true, nil
		}
	}
	return engine.Image{}, false, nil
}

// PruneOlder removes the images p's file made for p other than key's;
// one a container still runs stays, and so do the images of a profile of
// the same name in another file.
func PruneOlder(ctx context.Context, eng engine.Engine, log *slog.Logger, p *profiles.Profile, key string) {
	found, err := eng.Images(ctx, LabelProfile+"="+p.Name)
	if err != nil {
		log.Warn("listing a profile's older images", "profile", p.Name, "err", err)
		return
	}
	for _, img := range found {
		if img.Labels[LabelProfileKey] == key || img.Labels[LabelProfileFile] != p.FileID {
			continue
		}
		refs := img.Names
		if len(refs) == 0 {
			refs = []string{img.ID}
		}
		for _, ref := range refs {
			if err := eng.RemoveImage(ctx, ref); err != nil {
				log.Info("an older image of a profile stays", "profile", p.Name, "image", ref, "err", err)
				continue
			}
			log.Info("removed an older image of a profile", "profile", p.Name, "image", ref)
		}
	}
}

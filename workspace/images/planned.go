package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
)

// ProfileImage is a profile's image as Describe finds it.
type ProfileImage struct {
	Profile, Description string
	// Base is the base image ("" when none of its choices is present; it
	// is pulled on first use); Image the built one ("" for a profile
	// without setup commands, which runs Base itself, or when Base is
	// missing).
	Base, Image string
	// Built says Image exists; Size and Created describe it then.
	Built   bool
	Size    int64
	Created time.Time
}

// Describe describes the image of every profile of file (nil for none),
// whose bases without an image of their own are the first of
// imageChoices eng has, without pulling or building anything.
func Describe(ctx context.Context, eng engine.Engine, file *profiles.File, imageChoices []string) ([]ProfileImage, error) {
	var out []ProfileImage
	for _, p := range file.All() {
		pi := ProfileImage{Profile: p.Name, Description: p.Description}
		if p.Build != nil {
			pi.Base = p.Build.Found // its key needs the context packed: built on first use
			out = append(out, pi)
			continue
		}
		var baseID string
		if base, id, _ := presentImage(ctx, eng, baseChoices(imageChoices, p)); id != "" {
			pi.Base, baseID = base, id
		}
		if baseID != "" && len(p.Setup) > 0 {
			key := p.ImageKey(baseID)
			pi.Image = Name(p, key)
			img, ok, err := Find(ctx, eng, p, key)
			if err != nil {
				return nil, err
			}
			if ok {
				pi.Built, pi.Size, pi.Created = true, img.Size, time.Unix(img.Created, 0)
			}
		}
		out = append(out, pi)
	}
	return out, nil
}

// baseChoices are the images p's containers (or setup) may start from, in
// order of preference: its own image, else the server's choices.
func baseChoices(imageChoices []string, p *profiles.Profile) []string {
	if p != nil && p.Image != "" {
		return []string{p.Image}
	}
	return imageChoices
}

// presentImage is the first of choices eng has, with its ID, else the last
// of them (which would be pulled) and "". When eng does not answer (ctx
// ends, or it is unreachable), it is the first of them, and known is false.
func presentImage(ctx context.Context, eng engine.Engine, choices []string) (image, id string, known bool) {
	for _, c := range choices {
		id, err := eng.ImageID(ctx, c)
		if err == nil {
			return c, id, true
		}
		if ctx.Err() != nil || errors.Is(err, engine.ErrUnreachable) || errors.Is(err, engine.ErrSlow) {
			return choices[0], "", false
		}
	}
	return choices[len(choices)-1], "", true
}

// PlannedImage is the image a session's container runs or will run.
type PlannedImage struct {
	// Image names it; Profile is the session's profile, "" for none.
	Image, Profile string
	// Pending says how Image comes to be when it is not there yet (pulled,
	// or built by the profile's setup), "" when it is.
	Pending string
}

// SessionImage says which image the container of the session id runs, or,
// before it has one, will start from: its profile's (the one it asked
// for, else the default), built or not, else the server's image (the
// first of its choices the engine has). It neither makes the session nor
// pulls or builds anything, and returns when ctx ends at the latest: then
// with what this process knows without the engine (KnownSessionImage).
func (r *Room) SessionImage(ctx context.Context, id string) PlannedImage {
	image, p := r.deps.Session(id)
	if image != "" {
		return PlannedImage{Image: image, Profile: profileName(p)}
	}
	// The engine's calls end with ctx, but a connection being made holds
	// them up: the answer is waited for no longer than ctx.
	done := make(chan PlannedImage, 1)
	go func() { done <- r.planned(ctx, p) }()
	select {
	case planned := <-done:
		return planned
	case <-ctx.Done():
		return r.knownImage(p)
	}
}

// planned is the image a new container of profile p (nil for none) would
// start from; knownImage when the engine does not answer. An image found
// present is recorded as p's.
func (r *Room) planned(ctx context.Context, p *profiles.Profile) PlannedImage {
	const onFirstUse = "when the first command needs it"
	eng := r.deps.Engine
	out := PlannedImage{Profile: profileName(p)}
	if image, ok := r.pushed(p); ok {
		out.Image, out.Pending = image, "pulled from the registry "+onFirstUse
		return out
	}
	if p != nil && p.Build != nil {
		return r.knownImage(p)
	}
	base, baseID, known := presentImage(ctx, eng, baseChoices(r.deps.ImageChoices, p))
	out.Image = base
	switch {
	case !known:
		return r.knownImage(p)
	case p == nil || len(p.Setup) == 0:
		if baseID == "" {
			out.Pending = "pulled " + onFirstUse
		} else {
			r.known.Set(out.Profile, base)
		}
		return out
	case baseID == "":
		out.Pending = fmt.Sprintf("pulled %s; profile `%s`'s setup then builds the workspace's image from it", onFirstUse, p.Name)
		return out
	}
	key := p.ImageKey(baseID)
	out.Image = Name(p, key)
	if _, built, err := Find(ctx, eng, p, key); err != nil || !built {
		out.Pending = fmt.Sprintf("built from `%s` by profile `%s`'s setup %s", base, p.Name, onFirstUse)
	} else {
		r.known.Set(out.Profile, out.Image)
	}
	return out
}

// KnownSessionImage is SessionImage without asking the engine, so it never
// waits: the image the session's container runs; before it has one, the
// image this process last found for its profile (knownImage); else what
// the configuration says.
func (r *Room) KnownSessionImage(id string) PlannedImage {
	image, p := r.deps.Session(id)
	if image != "" {
		return PlannedImage{Image: image, Profile: profileName(p)}
	}
	return r.knownImage(p)
}

// knownImage is the image a new container of profile p (nil for none)
// starts from as far as this process knows without the engine: the one
// it last found for p, else the first of p's choices, which its setup
// builds from, saying which choice comes next when the engine lacks it.
func (r *Room) knownImage(p *profiles.Profile) PlannedImage {
	out := PlannedImage{Profile: profileName(p)}
	if image, ok := r.pushed(p); ok {
		out.Image = image
		return out
	}
	if image, ok := r.known.Get(out.Profile); ok {
		out.Image = image
		return out
	}
	if p != nil && p.Build != nil {
		out.Image = ProfileImageRepo + ":" + p.Name + "-..."
		out.Pending = fmt.Sprintf("built from %s when the first command needs it (or found built, if its context is unchanged)", p.Build.Found)
		return out
	}
	choices := baseChoices(r.deps.ImageChoices, p)
	if base, ok := r.known.Get(""); ok && (p == nil || p.Image == "") {
		choices = []string{base}
	}
	out.Image = choices[0]
	var pending []string
	if len(choices) > 1 {
		pending = append(pending, "if the Podman service has it; else `"+strings.Join(choices[1:], "`, else `")+"`, pulled if missing")
	}
	if p != nil && len(p.Setup) > 0 {
		pending = append(pending, fmt.Sprintf("profile `%s`'s setup builds the workspace's image from it", p.Name))
	}
	out.Pending = strings.Join(pending, ": ")
	return out
}

// ProfileImages describes the image of every profile, without building.
func (r *Room) ProfileImages(ctx context.Context) ([]ProfileImage, error) {
	return Describe(ctx, r.deps.Engine, r.deps.Profiles, r.deps.ImageChoices)
}

// Prune removes the profile images of this room's profiles file that no
// profile of it would use now: those of profiles no longer in the file,
// and those of older inputs; and those made before images named their
// file, which no server finds any more; and those of a profiles file that
// no longer exists on this machine, which no prune could reach otherwise.
// Another file's images stay, whatever their profiles' names: they are
// returned as kept, each with its file. One a container runs stays too.
// It returns the images removed.
func (r *Room) Prune(ctx context.Context) (removed, kept []string, err error) {
	current, err := r.ProfileImages(ctx)
	if err != nil {
		return nil, nil, err
	}
	keep := map[string]bool{}
	for _, pi := range current {
		keep[pi.Image] = pi.Image != ""
	}
	eng := r.deps.Engine
	found, err := eng.Images(ctx, LabelProfile)
	if err != nil {
		return nil, nil, err
	}
	for _, img := range found {
		if file := img.Labels[LabelProfileFile]; file != "" && !r.deps.Profiles.OwnsImagesOf(file) && !gone(file) {
			for _, ref := range img.Names {
				kept = append(kept, fmt.Sprintf("%s (profiles file %s)", ref, file))
			}
			continue
		}
		for _, ref := range img.Names {
			if keep[ref] {
				continue
			}
			if err := eng.RemoveImage(ctx, ref); err != nil {
				r.deps.Log.Info("a profile image stays", "image", ref, "err", err)
				continue
			}
			removed = append(removed, ref)
		}
	}
	return removed, kept, nil
}

// gone reports whether a profiles file no longer exists here; one that
// cannot be read for another reason is not gone.
func gone(file string) bool {
	_, err := os.Stat(file)
	return errors.Is(err, fs.ErrNotExist)
}

// profileName is p's name, "" for none.
func profileName(p *profiles.Profile) string {
	if p == nil {
		return ""
	}
	return p.Name
}

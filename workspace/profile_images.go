package workspace

import (
	"context"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
)

// ProfileImage is a profile's image as ProfileImages finds it.
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

// profileImages describes the image of every profile of cfg, without
// pulling or building anything.
func profileImages(ctx context.Context, eng engine.Engine, cfg Config) ([]ProfileImage, error) {
	var out []ProfileImage
	for _, p := range cfg.Profiles.All() {
		pi := ProfileImage{Profile: p.Name, Description: p.Description}
		choices := cfg.ImageChoices()
		if p.Image != "" {
			choices = []string{p.Image}
		}
		var baseID string
		for _, c := range choices {
			if id, err := eng.ImageID(ctx, c); err == nil {
				pi.Base, baseID = c, id
				break
			}
		}
		if baseID != "" && len(p.Setup) > 0 {
			key := p.ImageKey(baseID)
			pi.Image = profileImageName(p, key)
			img, ok, err := findProfileImage(ctx, eng, p, key)
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

// ProfileImages describes the image of every profile, without building.
func (m *Manager) ProfileImages(ctx context.Context) ([]ProfileImage, error) {
	return profileImages(ctx, m.eng, m.cfg)
}

// PruneProfileImages removes the profile images that no profile of this
// configuration would use now: those of profiles no longer in the file,
// and those of older inputs. One a container runs stays. It returns the
// images removed.
func (m *Manager) PruneProfileImages(ctx context.Context) ([]string, error) {
	current, err := m.ProfileImages(ctx)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, pi := range current {
		keep[pi.Image] = pi.Image != ""
	}
	found, err := m.eng.Images(ctx, LabelProfile)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, img := range found {
		for _, ref := range img.Names {
			if keep[ref] {
				continue
			}
			if err := m.eng.RemoveImage(ctx, ref); err != nil {
				m.log.Info("a profile image stays", "image", ref, "err", err)
				continue
			}
			removed = append(removed, ref)
		}
	}
	return removed, nil
}

// pruneProfileImages removes the images of the profile called name other
// than key's; one a container still runs stays.
func (m *Manager) pruneProfileImages(ctx context.Context, name, key string) {
	found, err := m.eng.Images(ctx, LabelProfile+"="+name)
	if err != nil {
		m.log.Warn("listing a profile's older images", "profile", name, "err", err)
		return
	}
	for _, img := range found {
		if img.Labels[LabelProfileKey] == key {
			continue
		}
		refs := img.Names
		if len(refs) == 0 {
			refs = []string{img.ID}
		}
		for _, ref := range refs {
			if err := m.eng.RemoveImage(ctx, ref); err != nil {
				m.log.Info("an older image of a profile stays", "profile", name, "image", ref, "err", err)
				continue
			}
			m.log.Info("removed an older image of a profile", "profile", name, "image", ref)
		}
	}
}

package workspace

import (
	"fmt"
	"strings"
	"sync"

	"github.com/wink-mcp/wink-mcp/profiles"
)

// knownImages are the images new containers start from as this process
// last found them, by profile name ("" for sessions without one): the
// server's choice among its images (Manager.ensureImage), a profile's
// image, built or base (Manager.profileImage, which the making of every
// container goes through, the pool's included), and what a prompt's
// look-up found there. They let an initialize name a session's image
// without asking the engine. Safe for concurrent use.
type knownImages struct {
	mu     sync.Mutex
	images map[string]string
}

// set records image as profile's and returns the one recorded before.
func (k *knownImages) set(profile, image string) (previous string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.images == nil {
		k.images = map[string]string{}
	}
	previous, k.images[profile] = k.images[profile], image
	return previous
}

// get is the image recorded for profile.
func (k *knownImages) get(profile string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	image, ok := k.images[profile]
	return image, ok
}

// KnownSessionImage is SessionImage without asking the engine, so it never
// waits: the image the session's container runs; before it has one, the
// image this process last found for its profile (knownImage); else what
// the configuration says.
func (m *Manager) KnownSessionImage(id string) PlannedImage {
	image, p := m.sessionImage(id)
	if image != "" {
		return PlannedImage{Image: image, Profile: profileName(p)}
	}
	return m.knownImage(p)
}

// sessionImage is the image of the container the session id runs ("" when
// it has none, or none is made) and its profile (that of its options, or
// the default, before it is made). It takes no session's lock, which the
// making of a container holds.
func (m *Manager) sessionImage(id string) (image string, p *profiles.Profile) {
	m.mu.Lock()
	s, made := m.sessions[id]
	opts := m.options[id]
	m.mu.Unlock()
	if made {
		if seen := s.seen.Load(); seen != nil {
			p, _ = m.cfg.Profiles.Get(seen.Profile)
			return seen.Image, p
		}
	}
	p = m.defaultProfile()
	if opts.Profile != "" {
		p, _ = m.cfg.Profiles.Get(opts.Profile)
	}
	return "", p
}

// knownImage is the image a new container of profile p (nil for none)
// starts from as far as this process knows without the engine: the one
// it last found for p, else the first of p's choices, which its setup
// builds from, saying which choice comes next when the engine lacks it.
func (m *Manager) knownImage(p *profiles.Profile) PlannedImage {
	out := PlannedImage{Profile: profileName(p)}
	if image, ok := m.known.get(out.Profile); ok {
		out.Image = image
		return out
	}
	choices := baseChoices(m.cfg, p)
	if base, ok := m.known.get(""); ok && (p == nil || p.Image == "") {
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

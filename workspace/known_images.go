package workspace

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/profiles"
)

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
	if image, ok := m.known.Get(out.Profile); ok {
		out.Image = image
		return out
	}
	choices := baseChoices(m.cfg, p)
	if base, ok := m.known.Get(""); ok && (p == nil || p.Image == "") {
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

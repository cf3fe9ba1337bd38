package workspace

import (
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

// PlannedImage is the image a session's container runs or will run
// (images.PlannedImage).
type PlannedImage = images.PlannedImage

// sessionImage is the image of the container the session id runs ("" when
// it has none, or none is made) and its profile (that of its options, or
// the default, before it is made): images.Deps.Session. It takes no
// session's lock, which the making of a container holds.
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

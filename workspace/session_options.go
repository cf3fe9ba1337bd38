package workspace

// SessionOptions are what a session asks for as it starts.
type SessionOptions struct {
	// Workspace names a kept workspace the session opens (or makes), ""
	// for a workspace of its own that ends with it.
	Workspace string
	// Profile names the profile the session starts with, "" for the
	// default (Config.Profile).
	Profile string
	// Principal is the digest of the bearer token of the session's client
	// ("" for local clients): kept workspaces and handed-over ones are
	// only ever given to the same principal.
	Principal string
	// Stdio says the client is a local process over stdio, alone in this
	// server: a workspace it hands over goes to disk, for another process.
	Stdio bool
	// OnWanted, for a kept workspace that any server may serve in turn
	// (engine.KeptAsk.OnWanted), is called when another server asks for
	// it; nil for one only this server serves.
	OnWanted func()
	// Roaming names a workspace, not kept, any server may serve (roaming.go).
	Roaming string
	// handedOver opens a kept workspace reserved for a handoff, whose
	// handle was just claimed.
	handedOver bool
}

// Register records what the session with this ID asks for; call it before
// the session's first use.
func (m *Manager) Register(id string, opts SessionOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, made := m.sessions[id]; !made && !m.ended.has(id) {
		m.options[id] = opts
	}
}

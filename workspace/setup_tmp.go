package workspace

import "github.com/wink-mcp/wink-mcp/engine"

// A setup's /tmp is not the sessions' small tmpfs: it is the container's
// own directory (engine.Spec.TmpOnDisk), so what package managers unpack
// there, and the caches they keep in HOME (which is /tmp), count towards
// limits.setup_disk with everything else the setup writes, and a setup
// that needs more than the sessions' /tmp no longer fails with a bare "No
// space left on device". The engine empties it before the image is saved
// (engine.Engine.ClearTmp), where a session would never see it anyway:
// its /tmp is a tmpfs.

// setupSpec makes spec a setup container's: root's capabilities for
// package managers, only the profile's environment (the image keeps it;
// the proxy's is given to each command), and /tmp on the container's disk.
func setupSpec(spec *engine.Spec, s *Session) {
	spec.Caps, spec.Env, spec.TmpOnDisk = engine.SetupCaps, s.profile.Env, true
}

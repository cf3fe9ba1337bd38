package workspace

import "github.com/wink-mcp/wink-mcp/engine"

// A setup's /tmp is not the sessions' small tmpfs, and its /workspace is
// not a host directory: both are directories of the container's own
// filesystem (engine.Spec.TmpOnDisk, engine.Spec.WorkspaceInContainer).
// So what package managers unpack there, and the caches they keep in HOME
// (which is /tmp), count towards limits.setup_disk with everything else
// the setup writes, which watchSetupDisk bounds; a setup needing more than
// the sessions' /tmp no longer fails with a bare "No space left on
// device"; and one unpacking into /workspace can no longer fill the host's
// disk unmeasured: the host never holds what it writes. A disk of its own
// for /workspace, as sessions have, would bound it only where loop
// devices can be made (root, this machine's Podman), and apart from the
// rest of the setup's writes. The engine empties both before the image is
// saved (engine.Engine.ClearDirs), where a session would never see them
// anyway: its /tmp is a tmpfs, and its /workspace its own.

// setupSpec makes spec a setup container's: root's capabilities for
// package managers, only the profile's environment (the image keeps it;
// the proxy's is given to each command), and /tmp and /workspace on the
// container's own disk.
func setupSpec(spec *engine.Spec, s *Session) {
	spec.Caps, spec.Env, spec.TmpOnDisk = engine.SetupCaps, s.profile.Env, true
	spec.WorkspaceInContainer, spec.WorkspaceDir, spec.WorkspaceVolume = true, "", ""
}

// setupScratch are the directories of a setup container emptied before
// its image is saved.
var setupScratch = []string{"/tmp", Root}

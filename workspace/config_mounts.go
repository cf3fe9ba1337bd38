package workspace

import (
	"cmp"
	"slices"

	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// MountMode says how a host folder appears in the workspace (mounts.Mode).
type MountMode = mounts.Mode

// Mount modes.
const (
	// MountOverlay shows the folder read-write through a Podman overlay.
	MountOverlay = mounts.Overlay
	// MountReadOnly shows the folder read-only.
	MountReadOnly = mounts.ReadOnly
	// MountCopy copies the folder's files, filtered, into the session.
	MountCopy = mounts.Copy
)

// DefaultCopyMaxBytes bounds the bytes a copy mount copies unless it says otherwise.
const DefaultCopyMaxBytes = mounts.DefaultCopyMaxBytes

// Mount is a host folder shown in every session's workspace (mounts.Mount).
type Mount = mounts.Mount

// MountInfo describes one host folder in a session's workspace (mounts.Info).
type MountInfo = mounts.Info

// Export is what one mount's patch holds (mounts.Export).
type Export = mounts.Export

// ExportedPatch is a patch file the export wrote (mounts.ExportedPatch).
type ExportedPatch = mounts.ExportedPatch

// planMounts checks the mount settings against the host.
func (c Config) planMounts() (mounts.Plan, error) {
	return mounts.MakePlan(c.Mounts, c.MountRoots, c.AllowedRoots, c.CacheDir, c.User)
}

// CheckMounts resolves the configured mounts as a server would at start-up,
// and returns them and the user the workspace would run as (on rootful
// Podman), or the problems found.
func (c Config) CheckMounts() ([]MountInfo, string, error) {
	plan, err := c.planMounts()
	if err != nil {
		return nil, "", err
	}
	user := c.User
	if user == "" {
		user = cmp.Or(plan.Owner, DefaultUser)
	}
	return mounts.Infos(plan.Mounts), user, nil
}

// overlays says whether some session may mount a folder as an overlay.
func (c Config) overlays() bool {
	return c.MountRoots || slices.ContainsFunc(c.allMounts(), func(m Mount) bool { return m.Mode == "" || m.Mode == MountOverlay })
}

package workspace

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/wink-mcp/wink-mcp/profiles/detect"
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

// Detection is what the server found in a host folder about the
// toolchain it needs (package profiles/detect).
type Detection struct {
	// Folder is the folder as sessions see it (/workspace/NAME).
	Folder string
	// Finding is what was found there and why.
	Finding detect.Finding
	// Started says sessions start in Finding.Profile (--detect auto);
	// otherwise the finding is only offered to the model.
	Started bool
}

// Sentence says the detection in one sentence for the model.
func (d *Detection) Sentence() string {
	f := d.Finding
	switch {
	case !f.Found():
		return fmt.Sprintf("No toolchain was recognised in %s: %s.", d.Folder, f.Reason)
	case d.Started:
		return fmt.Sprintf("The workspace starts in the `%s` profile, found in %s: %s.", f.Profile, d.Folder, f.Reason)
	default:
		return fmt.Sprintf("Found in %s: %s. Switch to it with `workspace_profile` (name `%s`) before building, unless the task needs another.", d.Folder, f.Reason, f.Profile)
	}
}

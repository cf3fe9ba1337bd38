package devcontainer

import (
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/profiles"
)

// ProfileName is the name of the profile a project folder makes.
const ProfileName = "project"

// Profile is the profile of f, found in the host folder dir: its image,
// or its Dockerfile built with buildEgress as the build's allowlist; its
// environment, user and post-create command. Its file identity is the
// folder's, so its images are pruned per folder.
func (f *Found) Profile(dir string, buildEgress []string) *profiles.Profile {
	p := &profiles.Profile{Name: ProfileName, Image: f.Image, Env: f.Env, User: f.User, PostCreate: f.PostCreate,
		File: dir + "/" + f.File, FileID: "project:" + dir, Description: f.Summary()}
	if f.Dockerfile != "" {
		p.Build = &profiles.Build{Dir: dir, Dockerfile: f.Dockerfile, Context: f.Context, Found: dir + "/" + f.File}
		p.Egress.Setup = buildEgress
	}
	return p
}

// Summary says in a few lines what was found, why, and what is ignored:
// for the prompt, the profiles list and the log.
func (f *Found) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "from %s (%s)", f.File, f.Why)
	if f.Dockerfile != "" {
		fmt.Fprintf(&b, "; image built from %s (context %s)", f.Dockerfile, f.Context)
	} else {
		fmt.Fprintf(&b, "; image %s", f.Image)
	}
	if f.User != "" {
		fmt.Fprintf(&b, "; user %s", f.User)
	}
	if f.PostCreate != "" {
		b.WriteString("; postCreateCommand runs in each new container")
	}
	if len(f.ForwardPorts) > 0 {
		fmt.Fprintf(&b, "; serves ports %v (reach them with the port preview)", f.ForwardPorts)
	}
	if len(f.Ignored) > 0 {
		fmt.Fprintf(&b, "; ignored: %s", strings.Join(f.Ignored, ", "))
	}
	return b.String()
}

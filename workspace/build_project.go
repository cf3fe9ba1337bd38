package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

// projectBuilds build the project images of a manager's sessions
// (images.Deps.BuildProject): a type of its own, beside Manager.
type projectBuilds struct{ m *Manager }

// projectBuilder is images.Deps.BuildProject of m: nil when the engine
// cannot build images (Config.ImageBuilder).
func projectBuilder(m *Manager) func(context.Context, *profiles.Profile, io.Reader, string, string, *images.Build) error {
	if m.cfg.ImageBuilder == nil {
		return nil
	}
	return projectBuilds{m}.build
}

// build builds p's project Dockerfile from the context archive
// as image. Its RUN steps share the network namespace of a container of
// their own, made like a profile's setup container: no network device,
// only its agent's egress proxy on the loopback, which allows p's setup
// patterns (the server's --egress for a project) and nothing else; the
// container goes whatever happens.
func (pb projectBuilds) build(ctx context.Context, p *profiles.Profile, tarball io.Reader, key, image string, b *images.Build) (err error) {
	m := pb.m
	base, err := m.images.ServerImage(ctx) // any image: the agent needs nothing of it
	if err != nil {
		return err
	}
	s, refusals, end := setupSession(ctx, m, "build-"+key[:20], p, base)
	defer end()
	b.SetStatus("starting the build's network container from " + base)
	if _, err := s.Start(ctx); err != nil {
		return fmt.Errorf("%w: starting the network container of %s's build: %v", ErrProjectBuildFailed, p.Build.Found, err)
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout(p))
	defer cancel()
	args := map[string]string{}
	if s.proxy != nil {
		args = proxyEnv()
	}
	labels := map[string]string{LabelProfile: p.Name, LabelProfileKey: key, LabelProfileBase: "dockerfile", LabelProfileFile: p.FileID}
	err = m.cfg.ImageBuilder.BuildImage(ctx, engine.BuildRequest{Context: tarball, Dockerfile: images.ContextDockerfile(p.Build), Image: image,
		Labels: labels, NetworkOf: s.name, Args: args, Limits: profileLimits(m.cfg.Limits, p),
		Output: func(line string) { b.SetStatus("building " + p.Build.Dockerfile + ": " + firstLine(line)) }})
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (the build is bounded by limits.setup_timeout, %s)", err, setupTimeout(p))
		}
		if fromMissing(err) {
			return fmt.Errorf("%w: %s: its FROM image is neither on this engine nor could it be pulled; "+
				"pull or build it where Podman runs, or name an image the engine has: %v", ErrProjectBuildFailed, p.Build.Found, err)
		}
		return fmt.Errorf("%w: %s: %v\n%s", ErrProjectBuildFailed, p.Build.Found, err, refusals.Explain())
	}
	return nil
}

// ErrProjectBuildFailed is wrapped by the error of a project's image
// build that failed.
var ErrProjectBuildFailed = errors.New("the project's image build failed")

// fromMissing says whether a build failed on getting its FROM image
// (Podman's words for a base it cannot pull).
func fromMissing(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "creating build container") && strings.Contains(msg, "initializing source")
}

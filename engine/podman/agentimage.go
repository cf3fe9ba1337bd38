package podman

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/specgen"

	"github.com/wink-mcp/wink-mcp/engine"
)

// A service that does not share this machine's files cannot bind-mount the
// agent: it is copied, once per agent binary and workspace image, into an
// image made from the workspace image on the service's host.

// AgentImageRepo names the images made with the agent copied in; each tag
// is one agent binary on one workspace image.
const AgentImageRepo = "localhost/wink-agent"

// agentArch maps ELF machines to the architectures Podman reports.
var agentArch = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}

// agentImage returns the image that is base with the agent at
// engine.AgentPath, making it when the service lacks it. labels mark the
// short-lived container it is made from, so that a sweep removes it if
// this process dies before it does.
func (e *Engine) agentImage(ctx context.Context, base, agent string, labels map[string]string) (_ string, err error) {
	e.agentMu.Lock()
	defer e.agentMu.Unlock()
	key := base + "\x00" + agent
	if image, ok := e.agentImages[key]; ok {
		return image, nil
	}
	sum, err := e.agentSum(ctx, agent)
	if err != nil {
		return "", err
	}
	c, end, err := e.call(ctx)
	if err != nil {
		return "", err
	}
	defer end(&err)
	img, err := images.GetImage(c, base, nil)
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", base, err)
	}
	tag := sum[:16] + "-" + strings.TrimPrefix(img.ID, "sha256:")[:16]
	image := AgentImageRepo + ":" + tag
	exists, err := images.Exists(c, image, nil)
	if err != nil {
		return "", fmt.Errorf("checking image %s: %w", image, err)
	}
	if !exists {
		if err := e.makeAgentImage(ctx, base, agent, tag, labels); err != nil {
			return "", fmt.Errorf("copying the agent into an image made from %s on the Podman host: %w", base, err)
		}
		e.log.Info("made the agent image", "image", image, "from", base)
	}
	if e.agentImages == nil {
		e.agentImages = map[string]string{}
	}
	e.agentImages[key] = image
	return image, nil
}

// agentSum checks that agent is a Linux executable for the service's
// architecture and returns its SHA-256.
func (e *Engine) agentSum(ctx context.Context, agent string) (string, error) {
	host, err := e.SettledHost(ctx)
	if err != nil {
		return "", err
	}
	f, err := elf.Open(agent)
	if err != nil {
		return "", fmt.Errorf("the agent %s is not a Linux executable (%v); the Podman host runs Linux/%s: pass --agent-binary with a static linux/%s wink-mcp", agent, err, host.Arch, host.Arch)
	}
	arch := agentArch[f.Machine]
	f.Close()
	if arch != host.Arch {
		return "", fmt.Errorf("the agent %s is built for linux/%s and the Podman host is linux/%s: pass --agent-binary with a static linux/%s wink-mcp", agent, arch, host.Arch, host.Arch)
	}
	r, err := os.Open(agent)
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// makeAgentImage creates a container from base (never started), copies
// the agent into it, and commits it as AgentImageRepo:tag.
func (e *Engine) makeAgentImage(ctx context.Context, base, agent, tag string, labels map[string]string) (err error) {
	connCtx, err := e.connect(ctx)
	if err != nil {
		return err
	}
	// Bounded like a pull: the agent crosses the link to the Podman host.
	c, end := within(ctx, connCtx, e.pullTimeout)
	defer end(&err)
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	name := "wink-agent-" + hex.EncodeToString(raw[:])
	s := specgen.NewSpecGenerator(base, false)
	s.Name, s.Labels = name, labels
	s.Entrypoint, s.Command = []string{engine.AgentPath}, []string{"version"}
	s.NetNS = specgen.Namespace{NSMode: specgen.NoNetwork}
	if _, err := containers.CreateWithSpec(c, s, nil); err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	defer func() {
		if _, rmErr := containers.Remove(c, name, new(containers.RemoveOptions).WithForce(true).WithVolumes(true)); rmErr != nil {
			e.log.Warn("removing the container the agent image was made from", "container", name, "err", rmErr)
		}
	}()
	archive, werr := agentArchive(agent)
	copyIn, err := containers.CopyFromArchive(c, name, "/", archive)
	if err == nil {
		err = copyIn()
	}
	if err = errors.Join(err, <-werr); err != nil {
		return fmt.Errorf("copying the agent into %s: %w", name, err)
	}
	_, err = containers.Commit(c, name, new(containers.CommitOptions).WithRepo(AgentImageRepo).WithTag(tag).
		WithChanges([]string{"LABEL io.wink-mcp.agent-image=true"}).WithPause(false))
	return err
}

// agentArchive streams a tar of the directory of engine.AgentPath holding
// the agent, owned by root and executable by all; the channel gets the
// writer's error once the stream ends.
func agentArchive(agent string) (io.Reader, <-chan error) {
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeAgentTar(w, agent)
		w.CloseWithError(err)
		done <- err
	}()
	return r, done
}

func writeAgentTar(w io.Writer, agent string) error {
	f, err := os.Open(agent)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	dir := strings.TrimPrefix(engine.AgentPath[:strings.LastIndex(engine.AgentPath, "/")], "/")
	t := tar.NewWriter(w)
	if err := t.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: info.ModTime()}); err != nil {
		return err
	}
	if err := t.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(engine.AgentPath, "/"), Mode: 0o755,
		Size: info.Size(), ModTime: info.ModTime()}); err != nil {
		return err
	}
	if _, err := io.Copy(t, f); err != nil {
		return err
	}
	return t.Close()
}

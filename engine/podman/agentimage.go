//go:build containers_image_openpgp

package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/containers"
	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/specgen"

	"github.com/wink-mcp/wink-mcp/embeddedagents"
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
	binary, sum, err := e.agentFor(ctx, agent)
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
		if err := e.makeAgentImage(ctx, base, binary, tag, labels); err != nil {
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

// agentFor returns the agent for the service's architecture (pickAgent).
func (e *Engine) agentFor(ctx context.Context, path string) (agent []byte, sum string, err error) {
	host, err := e.SettledHost(ctx)
	if err != nil {
		return nil, "", err
	}
	agent, err = pickAgent(path, host.Arch)
	if err != nil {
		return nil, "", err
	}
	h := sha256.Sum256(agent)
	return agent, hex.EncodeToString(h[:]), nil
}

// pickAgent returns the agent for linux/arch: the binary at path when it
// is a Linux executable for arch, else the one this build carries
// (package embeddedagents).
func pickAgent(path, arch string) ([]byte, error) {
	why := "no agent binary is given"
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the agent binary: %w", err)
		}
		switch got := elfArch(b); got {
		case arch:
			return b, nil
		case "":
			why = path + " is not a Linux executable"
		default:
			why = path + " is built for linux/" + got
		}
	}
	if b := embeddedagents.For(arch); b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("the Podman host is linux/%s and %s, nor does this build carry one: "+
		"pass --agent-binary with a static linux/%s wink-mcp, or use a build made by `make dist`", arch, why, arch)
}

// elfArch returns the architecture of the ELF executable b, as Podman
// names it, or "" when b is not one.
func elfArch(b []byte) string {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	defer f.Close()
	return agentArch[f.Machine]
}

// makeAgentImage creates a container from base (never started), copies
// the agent into it, and commits it as AgentImageRepo:tag.
func (e *Engine) makeAgentImage(ctx context.Context, base string, agent []byte, tag string, labels map[string]string) (err error) {
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
	var archive bytes.Buffer
	if err := writeAgentTar(&archive, agent); err != nil {
		return err
	}
	copyIn, err := containers.CopyFromArchive(c, name, "/", &archive)
	if err == nil {
		err = copyIn()
	}
	if err != nil {
		return fmt.Errorf("copying the agent into %s: %w", name, err)
	}
	_, err = containers.Commit(c, name, new(containers.CommitOptions).WithRepo(AgentImageRepo).WithTag(tag).
		WithChanges([]string{"LABEL io.wink-mcp.agent-image=true"}).WithPause(false))
	return err
}

// writeAgentTar writes a tar of the directory of engine.AgentPath holding
// agent, owned by root and executable by all.
func writeAgentTar(w io.Writer, agent []byte) error {
	dir := strings.TrimPrefix(path.Dir(engine.AgentPath), "/")
	t := tar.NewWriter(w)
	if err := t.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}); err != nil {
		return err
	}
	if err := t.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(engine.AgentPath, "/"), Mode: 0o755,
		Size: int64(len(agent))}); err != nil {
		return err
	}
	if _, err := t.Write(agent); err != nil {
		return err
	}
	return t.Close()
}

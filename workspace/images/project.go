package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/profiles/devcontainer"
	"github.com/wink-mcp/wink-mcp/wire"
)

// projectKeyFormat is part of every project image's key, bumped when
// what a build does with the same inputs changes.
const projectKeyFormat = 1

// EventProjectBuildStarted is logged when a project's Dockerfile starts
// building.
const EventProjectBuildStarted = "project_build_started"

// projectImage returns the image of p's project Dockerfile (p.Build),
// building it when no image has its key: the hash of the build context
// as packed (devcontainer.Pack), the Dockerfile's path and the build's
// egress patterns. A Dockerfile that would reach around the allowlist,
// and a context over its limits, are refused before anything is built.
func (r *Room) projectImage(ctx context.Context, p *profiles.Profile, progress func(wire.Progress)) (string, bool, error) {
	if r.deps.BuildProject == nil {
		return "", false, fmt.Errorf("%s: this engine cannot build an image from a Dockerfile; "+
			"build it where Podman runs and name it as a profile's image instead", p.Build.Found)
	}
	if err := checkProjectDockerfile(p.Build); err != nil {
		return "", false, err
	}
	packed, err := devcontainer.Pack(p.Build.Dir, p.Build.Context, ContextDockerfile(p.Build), r.deps.ContextLimits, io.Discard)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", p.Build.Found, err)
	}
	key := projectKey(p, packed.Hash)
	if _, ok, err := Find(ctx, r.deps.Engine, p, key); err != nil || ok {
		return Name(p, key), false, err
	}
	b := r.builds.Start(key, func(ctx context.Context, b *Build) (string, bool, error) {
		return r.runBuild(ctx, p, key, b, func() error { return r.buildProject(ctx, p, key, packed, b) })
	})
	return r.wait(ctx, p, b, progress)
}

// buildProject packs p's context again, into a file, checks it is the
// one key was made of, and builds it.
func (r *Room) buildProject(ctx context.Context, p *profiles.Profile, key string, want devcontainer.Packed, b *Build) error {
	if err := os.MkdirAll(r.deps.BuildLocks, 0o700); err != nil {
		return fmt.Errorf("creating the builds directory: %w", err)
	}
	f, err := os.CreateTemp(r.deps.BuildLocks, "context-*.tar")
	if err != nil {
		return fmt.Errorf("making room for the build context: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	b.SetStatus(fmt.Sprintf("packing the build context (%d files, %d bytes)", want.Files, want.Bytes))
	packed, err := devcontainer.Pack(p.Build.Dir, p.Build.Context, ContextDockerfile(p.Build), r.deps.ContextLimits, f)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Build.Found, err)
	}
	if packed.Hash != want.Hash {
		return fmt.Errorf("%s: the build context changed while it was packed; try again", p.Build.Found)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading the build context back: %w", err)
	}
	r.deps.Log.Info("project image build started", "event", EventProjectBuildStarted, "profile", p.Name,
		"dockerfile", p.Build.Dockerfile, "context", p.Build.Context, "context_files", packed.Files,
		"context_bytes", packed.Bytes, "image", Name(p, key))
	return r.deps.BuildProject(ctx, p, f, key, Name(p, key), b)
}

// ContextDockerfile is b's Dockerfile relative to its context.
func ContextDockerfile(b *profiles.Build) string {
	if b.Context == "." {
		return b.Dockerfile
	}
	return strings.TrimPrefix(b.Dockerfile, b.Context+"/")
}

// checkProjectDockerfile reads b's Dockerfile, in its folder, and checks
// it (devcontainer.CheckDockerfile).
func checkProjectDockerfile(b *profiles.Build) error {
	root, err := os.OpenRoot(b.Dir)
	if err != nil {
		return fmt.Errorf("%s: opening the project folder: %w", b.Found, err)
	}
	defer root.Close()
	data, err := root.ReadFile(filepath.FromSlash(b.Dockerfile))
	if err != nil {
		return fmt.Errorf("%s: reading %s: %w", b.Found, b.Dockerfile, err)
	}
	return devcontainer.CheckDockerfile(b.Dockerfile, data)
}

// projectKey is the SHA-256, in hex, of what p's project image is built
// from.
func projectKey(p *profiles.Profile, contextHash string) string {
	inputs, _ := json.Marshal(struct {
		Format     int      `json:"format"`
		File       string   `json:"file"`
		Name       string   `json:"name"`
		Dir        string   `json:"dir"`
		Context    string   `json:"context"`
		Dockerfile string   `json:"dockerfile"`
		Egress     []string `json:"egress"`
	}{projectKeyFormat, p.FileID, p.Name, p.Build.Dir, contextHash, p.Build.Dockerfile, p.Egress.Setup})
	sum := sha256.Sum256(inputs)
	return hex.EncodeToString(sum[:])
}

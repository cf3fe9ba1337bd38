package images

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/profiles/devcontainer"
	"github.com/wink-mcp/wink-mcp/wire"
)

// Events of a profile's image build (not of a session's container), each
// logged as one record with the attribute event=<name>.
const (
	EventSetupStarted = "profile_setup_started"
	EventSetupFailed  = "profile_setup_failed"
	EventImageBuilt   = "profile_image_built"
)

// Room is the images of a server's profiles: the builds in progress in
// this process (Builds), what each profile's sessions start from as last
// found (Known), and the look-ups that say which image a session runs or
// will run. It reaches its sessions and the setup containers only through
// its Deps. It is safe for concurrent use; Close ends its builds.
type Room struct {
	deps   Deps
	builds *Builds
	known  Known
}

// Deps are what a Room needs of the workspace that owns it.
type Deps struct {
	// Engine is the container engine the images are in.
	Engine engine.Engine
	// Log receives the builds' and choices' records.
	Log *slog.Logger
	// Profiles are the server's profiles (nil for none).
	Profiles *profiles.File
	// ImageChoices are the server's images, in order of preference
	// (Config.ImageChoices); ImageFixed says the server was given one,
	// so its choice is not logged.
	ImageChoices []string
	ImageFixed   bool
	// BuildLocks is the directory of the lock files that let one process
	// at a time build an image.
	BuildLocks string
	// TryLock takes an exclusive lock on f, which lasts until f is
	// closed, without waiting: busy says another holds it.
	TryLock func(f *os.File) (busy bool, err error)
	// EnsureImage returns the server's image, the first of ImageChoices
	// the engine has, else the last, pulled.
	EnsureImage func(ctx context.Context) (string, error)
	// Setup runs p's setup commands in a container from base and commits
	// it as image, labelled with key and baseID, setting b's status as it
	// goes; no image is left of a failure.
	Setup func(ctx context.Context, p *profiles.Profile, base, baseID, key, image string, b *Build) error
	// BuildProject builds the project Dockerfile of p (p.Build) from
	// the build context archive tarball, as image, labelled with key;
	// no image is left of a failure. nil when the engine cannot build.
	BuildProject func(ctx context.Context, p *profiles.Profile, tarball io.Reader, key, image string, b *Build) error
	// ContextLimits bound a project's build context.
	ContextLimits devcontainer.ContextLimits
	// PushedRepository, when set, is the registry repository the
	// profiles' images were pushed to (`wink-mcp profiles build --push`):
	// a profile with setup commands then runs its pushed image (Pushed),
	// which its engine pulls, and no setup ever runs in this process.
	PushedRepository string
	// Session is the image the container of the session id runs ("" when
	// it has none, or none is made) and its profile; it must not wait for
	// the making of a container.
	Session func(id string) (image string, p *profiles.Profile)
}

// NewRoom returns the room of deps, with no build in progress and no
// image known. The caller must call Close.
func NewRoom(deps Deps) *Room {
	return &Room{deps: deps, builds: NewBuilds()}
}

// Close cancels the builds in progress and waits for each to return.
func (r *Room) Close() { r.builds.Close() }

// ServerImage returns the image new containers of no profile use, pulled
// if need be, and records it as known; a server without a fixed image
// logs the one it chose when the choice changes (the local image built or
// removed while it runs).
func (r *Room) ServerImage(ctx context.Context) (string, error) {
	image, err := r.deps.EnsureImage(ctx)
	if err != nil {
		return image, err
	}
	if r.known.Set("", image) != image && !r.deps.ImageFixed {
		r.deps.Log.Info("image chosen", "image", image, "choices", r.deps.ImageChoices)
	}
	return image, nil
}

// BuildProfile builds the image of the profile called name unless it is
// built; it returns the image and whether it ran the setup.
func (r *Room) BuildProfile(ctx context.Context, name string, progress func(wire.Progress)) (string, bool, error) {
	p, err := r.deps.Profiles.Get(name)
	if err != nil {
		return "", false, err
	}
	return r.Image(ctx, p, progress)
}

// Image returns the image sessions under p (nil for none) start from,
// building it first when its setup has not run; built says this call
// waited for that. progress, if not nil, hears of the build every few
// seconds.
func (r *Room) Image(ctx context.Context, p *profiles.Profile, progress func(wire.Progress)) (image string, built bool, err error) {
	defer func() {
		if err == nil && p != nil {
			r.known.Set(p.Name, image)
		}
	}()
	if p == nil {
		image, err := r.ServerImage(ctx)
		return image, false, err
	}
	if p.Build != nil {
		return r.projectImage(ctx, p, progress)
	}
	if image, ok := r.pushed(p); ok {
		return image, false, nil
	}
	base, err := r.base(ctx, p)
	if err != nil || len(p.Setup) == 0 {
		return base, false, err
	}
	eng, log := r.deps.Engine, r.deps.Log
	id, err := eng.ImageID(ctx, base)
	if err != nil {
		return "", false, err
	}
	key := p.ImageKey(id)
	if _, ok, err := Find(ctx, eng, p, key); err != nil || ok {
		return Name(p, key), false, err
	}
	// The build is the room's, not the caller's: a session that stops
	// waiting leaves it to finish for the next.
	b := r.builds.Start(key, func(ctx context.Context, b *Build) (string, bool, error) {
		return r.runBuild(ctx, p, key, b, func() error {
			log.Info("profile setup started", "event", EventSetupStarted, "profile", p.Name, "base", base, "image", Name(p, key), "commands", len(p.Setup))
			return r.deps.Setup(ctx, p, base, id, key, Name(p, key), b)
		})
	})
	return r.wait(ctx, p, b, progress)
}

// wait waits for b, telling progress of it every few seconds.
func (r *Room) wait(ctx context.Context, p *profiles.Profile, b *Build, progress func(wire.Progress)) (image string, built bool, err error) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-b.Done():
			return b.Result()
		case <-ctx.Done():
			return "", false, fmt.Errorf("waiting for profile %q's image build (it goes on, for the next session): %w", p.Name, ctx.Err())
		case <-tick.C:
			if progress != nil {
				progress(b.Report())
			}
		}
	}
}

// base returns p's base image, pulled if need be.
func (r *Room) base(ctx context.Context, p *profiles.Profile) (string, error) {
	if p.Image == "" {
		return r.ServerImage(ctx)
	}
	image, err := r.deps.Engine.EnsureImage(ctx, []string{p.Image})
	if err != nil {
		return "", fmt.Errorf("profile %q: %w", p.Name, err)
	}
	return image, nil
}

// runBuild builds the image of key with build, unless another process
// built it while this one waited for the lock; ran says it did.
func (r *Room) runBuild(ctx context.Context, p *profiles.Profile, key string, b *Build, build func() error) (image string, ran bool, err error) {
	eng, log := r.deps.Engine, r.deps.Log
	image = Name(p, key)
	b.SetStatus("waiting for another wink-mcp building the same image")
	unlock, err := r.lockBuild(ctx, key)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	if _, ok, err := Find(ctx, eng, p, key); err != nil || ok {
		return image, false, err
	}
	start := time.Now()
	if err := build(); err != nil {
		log.Warn("profile setup failed", "event", EventSetupFailed, "profile", p.Name, "duration_ms", time.Since(start).Milliseconds(), "err", err)
		return "", false, err
	}
	img, _, err := Find(ctx, eng, p, key)
	if err != nil {
		return "", false, err
	}
	log.Info("profile image built", "event", EventImageBuilt, "profile", p.Name, "image", image, "size_bytes", img.Size, "duration_ms", time.Since(start).Milliseconds())
	PruneOlder(ctx, eng, log, p, key)
	return image, true, nil
}

// lockBuild takes the lock of key's build across processes, waiting for
// another process that holds it.
func (r *Room) lockBuild(ctx context.Context, key string) (unlock func(), err error) {
	dir := r.deps.BuildLocks
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the builds directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, key+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening a build's lock: %w", err)
	}
	for {
		busy, err := r.deps.TryLock(f)
		if err == nil && !busy {
			return func() { f.Close() }, nil
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking a build: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

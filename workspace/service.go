package workspace

import (
	"context"
	"errors"
	"fmt"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

// ServiceInfo describes the engine's service a Config reaches.
type ServiceInfo struct {
	engine.Description
	// Unenforced says which container limits the service cannot enforce.
	Unenforced Unenforced
}

// Service is the engine's service of a Config, seen from outside any
// session: what `wink-mcp doctor` asks about.
type Service struct {
	eng    engine.Engine
	cfg    Config
	images []string
}

// NewService returns the service of cfg.Engine, which must be set; it
// connects on first use.
func NewService(cfg Config) *Service {
	return &Service{eng: cfg.Engine, cfg: cfg, images: cfg.ImageChoices()}
}

// ServiceFix says how to get the service to answer (engine.Engine).
func (s *Service) ServiceFix() string { return s.eng.ServiceFix() }

// ProfileImages describes the image of every profile, without pulling or
// building anything.
func (s *Service) ProfileImages(ctx context.Context) ([]images.ProfileImage, error) {
	return images.Describe(ctx, s.eng, s.cfg.Profiles, s.images)
}

// Info connects to the service and describes it.
func (s *Service) Info(ctx context.Context) (ServiceInfo, error) {
	d, err := s.eng.Describe(ctx)
	if err != nil {
		return ServiceInfo{}, err
	}
	return ServiceInfo{Description: d, Unenforced: unenforced(engine.HostFacts{
		Rootless: d.Rootless, Cgroups: d.CgroupsVersion, Unlimitable: d.Unlimitable})}, nil
}

// EnsureImage returns the image sessions would use (the first of
// Config.ImageChoices present, else the last, pulled) and says whether it
// pulled it.
func (s *Service) EnsureImage(ctx context.Context) (image string, pulled bool, err error) {
	image, pulled, err = s.eng.ChooseImage(ctx, s.images)
	return image, pulled, withImageRemedy(err)
}

// ContainerExists reports whether a container of this name exists.
func (s *Service) ContainerExists(ctx context.Context, name string) (bool, error) {
	exists, _, err := s.eng.Running(ctx, name)
	return exists, err
}

// withImageRemedy ends the error of an image that is missing and cannot be
// pulled with ImageRemedy.
func withImageRemedy(err error) error {
	if errors.Is(err, engine.ErrImageUnavailable) {
		return fmt.Errorf("%w. %s", err, ImageRemedy)
	}
	return err
}

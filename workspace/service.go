package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/system"
)

// ServiceInfo describes the Podman service a Config reaches.
type ServiceInfo struct {
	// URI is the service that answered.
	URI string
	// Version and APIVersion are the service's Podman and REST API versions.
	Version, APIVersion string
	// DefaultRuntime is the OCI runtime used when Config.Runtime is empty.
	DefaultRuntime string
	// CgroupsVersion is "v1" or "v2" as the service sees the host.
	CgroupsVersion string
	// Rootless is true for a service running without root.
	Rootless bool
	// Remote is true when the service is not on this host's Unix socket.
	Remote bool
	// Unenforced says which container limits the service cannot enforce.
	Unenforced Unenforced
	// GraphDriver is the storage driver of its images ("overlay", "vfs").
	GraphDriver string
}

// Service is the Podman service of a Config, seen from outside any
// session: what `wink-mcp doctor` asks about.
type Service struct {
	eng    *podmanEngine
	images []string
}

// NewService returns the service cfg points at; it connects on first use.
func NewService(cfg Config, log *slog.Logger) *Service {
	return &Service{eng: newPodmanEngine(cfg, log), images: cfg.ImageChoices()}
}

// Info connects to the service and describes it.
func (s *Service) Info(ctx context.Context) (_ ServiceInfo, err error) {
	c, end, err := s.eng.call(ctx)
	if err != nil {
		return ServiceInfo{}, err
	}
	defer end(&err)
	info, err := system.Info(c, nil)
	if err != nil {
		return ServiceInfo{}, fmt.Errorf("asking the Podman service at %s for its info: %w", s.eng.uri, err)
	}
	out := ServiceInfo{
		URI:        s.eng.uri,
		Version:    info.Version.Version,
		APIVersion: bindings.ServiceVersion(c).String(),
		Remote:     !isUnixURI(s.eng.uri),
	}
	if h := info.Host; h != nil {
		out.CgroupsVersion, out.Rootless = h.CgroupsVersion, h.Security.Rootless
		if h.OCIRuntime != nil {
			out.DefaultRuntime = h.OCIRuntime.Name
		}
		out.Unenforced = unenforced(hostFacts{Rootless: out.Rootless, Cgroups: h.CgroupsVersion,
			Unlimitable: unlimitable(out.Rootless, h.CgroupsVersion, h.CgroupControllers)})
	}
	if info.Store != nil {
		out.GraphDriver = info.Store.GraphDriverName
	}
	return out, nil
}

// EnsureImage returns the image sessions would use (the first of
// Config.ImageChoices present, else the last, pulled) and says whether it
// pulled it.
func (s *Service) EnsureImage(ctx context.Context) (image string, pulled bool, err error) {
	return s.eng.chooseImage(ctx, s.images)
}

// ContainerExists reports whether a container of this name exists.
func (s *Service) ContainerExists(ctx context.Context, name string) (bool, error) {
	exists, _, err := s.eng.Running(ctx, name)
	return exists, err
}

func isUnixURI(uri string) bool { return strings.HasPrefix(uri, "unix://") }

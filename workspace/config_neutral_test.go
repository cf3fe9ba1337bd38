package workspace

import (
	"reflect"
	"strings"
	"testing"
)

// TestConfigNamesNoEngine fails when a field of Config names an engine:
// Config is engine-neutral (see package engine), and how to reach an
// engine's service is the business of cmd/wink-mcp, which builds the
// engine; what the packages above it need of the service they ask
// engine.Engine.
func TestConfigNamesNoEngine(t *testing.T) {
	for f := range reflect.TypeFor[Config]().Fields() {
		name := strings.ToLower(f.Name)
		for _, eng := range []string{"podman", "docker", "kube"} {
			if strings.Contains(name, eng) {
				t.Errorf("workspace.Config.%s names the %s engine; set the engine's own options where cmd/wink-mcp builds it", f.Name, eng)
			}
		}
	}
}

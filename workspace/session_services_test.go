package workspace

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/workspace/services"
)

// A service on an engine whose containers are Pods is refused with the
// reason, and makes no container.
func TestServicesAreRefusedOnPods(t *testing.T) {
	m, eng, _ := newTestManager(t, nil)
	eng.service.Pods = true
	s, err := m.Session("pods")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.services.Start(context.Background(), services.Spec{Name: "db", Profile: "p", Command: []string{"postgres"},
		Ports: []int{5432}, Ready: services.Ready{Port: 5432}})
	if !errors.Is(err, errServicesOnPods) || !strings.Contains(err.Error(), "Podman only") {
		t.Errorf("a service on Pods: %v", err)
	}
	if n := len(eng.specs); n != 0 {
		t.Errorf("%d containers made for a refused service", n)
	}
}

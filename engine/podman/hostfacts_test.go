//go:build containers_image_openpgp

package podman

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/engine"
)

func TestRecordedHostFacts(t *testing.T) {
	if bootID() == "" {
		t.Skip("no boot id on this host: facts are never recorded")
	}
	dir := t.TempDir()
	a := engine.HostFacts{Rootless: true, Markers: changes.FuseMarkers}
	b := engine.HostFacts{Markers: changes.KernelMarkers}
	if err := recordFacts(dir, "unix:///a", a); err != nil {
		t.Fatal(err)
	}
	if err := recordFacts(dir, "unix:///b", b); err != nil {
		t.Fatal(err)
	}
	if got, ok := readRecordedFacts(dir, "unix:///a"); !ok || got != a {
		t.Errorf("a = %+v %v", got, ok)
	}
	if got, ok := readRecordedFacts(dir, "unix:///b"); !ok || got != b {
		t.Errorf("b = %+v %v", got, ok)
	}
	if _, ok := readRecordedFacts(dir, "unix:///c"); ok {
		t.Error("facts for a service never asked")
	}
	path := filepath.Join(dir, hostFactsFile)
	for name, content := range map[string]string{
		"another boot":   `{"boot_id":"0000","services":{"unix:///a":{"rootless":true,"markers":"kernel"}}}`,
		"bad markers":    `{"boot_id":"` + bootID() + `","services":{"unix:///a":{"markers":"zfs"}}}`,
		"not JSON":       `{"boot_id":`,
		"no boot id":     `{"services":{"unix:///a":{"markers":"kernel"}}}`,
		"empty services": `{"boot_id":"` + bootID() + `"}`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, ok := readRecordedFacts(dir, "unix:///a"); ok {
			t.Errorf("%s: used %+v", name, got)
		}
	}
}

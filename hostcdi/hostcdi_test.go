package hostcdi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	yamlSpec := `cdiVersion: "0.5.0"
kind: "example.com/test"
containerEdits:
  env: ["ALL=1"]
devices:
  - name: a
    containerEdits:
      deviceNodes: [{path: /dev/a0, hostPath: /dev/null}]
      env: ["A=1"]
      mounts: [{hostPath: /srv/a, containerPath: /opt/a}]
`
	jsonSpec := `{"cdiVersion": "0.5.0", "kind": "other.example/gpu", "devices": [{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/g0"}]}}]}`
	for name, body := range map[string]string{"a.yaml": yamlSpec, "b.json": jsonSpec, "broken.yaml": "kind: [", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	devs, err := Resolve([]string{dir, filepath.Join(dir, "missing")}, []string{"example.com/test=a", "other.example/gpu=all"})
	if err != nil {
		t.Fatal(err)
	}
	a := devs[0]
	if strings.Join(a.Nodes, " ") != "/dev/a0" || strings.Join(a.Env, " ") != "ALL=1 A=1" || strings.Join(a.Mounts, " ") != "/srv/a:/opt/a" {
		t.Errorf("device a: %+v", a)
	}
	if devs[1].Nodes[0] != "/dev/g0" {
		t.Errorf("device all: %+v", devs[1])
	}
	_, err = Resolve([]string{dir}, []string{"example.com/test=nope"})
	for _, want := range []string{"CDI device example.com/test=nope: no spec in " + dir, "example.com/test=a, other.example/gpu=all", "broken.yaml"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing device: %v, want %q", err, want)
		}
	}
	for _, bad := range []string{"gpu", "nvidia.com/gpu", "/dev/null", "nvidia.com/gpu=a b", "-x/y=z"} {
		if _, err := Resolve([]string{dir}, []string{bad}); err == nil || !strings.Contains(err.Error(), "not a CDI device name") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

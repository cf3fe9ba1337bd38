package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

func changedPaths(t *testing.T, p *proc) map[string]string {
	t.Helper()
	res := p.call("workspace_changes", nil)
	if res.IsError {
		t.Fatal(textOf(res))
	}
	var r tools.WorkspaceChangesResult
	decodeStructured(t, res, &r)
	out := map[string]string{}
	for _, c := range r.Changes {
		out[c.Path] = c.Status
	}
	return out
}

func TestOverlayChangesSurviveARecreatedContainer(t *testing.T) {
	root, folder := project(t)
	p := start(t, startOptions{args: []string{"--mount", folder, "--allowed-root", root}})
	if res := p.call("write_file", map[string]any{"file_path": "proj/kept.txt", "content": "kept\n"}); res.IsError {
		t.Fatal(textOf(res))
	}
	name := p.container()
	if out, err := podman(t, "rm", "-f", "-t", "0", name); err != nil {
		t.Fatalf("removing the container from outside: %v %s", err, out)
	}
	if got := changedPaths(t, p); got["proj/kept.txt"] != "created" || len(got) != 1 {
		t.Errorf("changes with the container gone: %v", got)
	}
	res := p.call("read_file", map[string]any{"file_path": "proj/kept.txt"})
	if res.IsError || !strings.Contains(textOf(res), "kept") {
		t.Fatalf("the next call's new container lost the change: %s", textOf(res))
	}
	if _, err := os.Stat(filepath.Join(folder, "kept.txt")); !os.IsNotExist(err) {
		t.Error("the change reached the host folder")
	}
}

func TestCopyMountInARealContainer(t *testing.T) {
	root, folder := project(t)
	must(t, os.MkdirAll(filepath.Join(folder, "vendor"), 0o755))
	must(t, os.WriteFile(filepath.Join(folder, "vendor", "dep.go"), []byte("package dep\n"), 0o644))
	before := hostManifest(t, folder)
	p := start(t, startOptions{args: []string{"--mount", folder + ":code:copy,include=**/*.go,include=README.md,exclude=vendor,max_bytes=1k", "--allowed-root", root}})

	res := p.call("glob", map[string]any{"pattern": "**", "path": "code"})
	if res.IsError {
		t.Fatal(textOf(res))
	}
	var found tools.GlobResult
	decodeStructured(t, res, &found)
	var paths []string
	for _, m := range found.Matches {
		paths = append(paths, m.Path)
	}
	if got := strings.Join(paths, " "); got != "code/README.md code/src/main.go code/src/old.go" {
		t.Errorf("copied %q, want only the included files outside vendor", got)
	}
	// The copy belongs to the container user, who edits it.
	if res := p.call("edit_file", map[string]any{"file_path": "code/src/main.go", "old_string": "func main() {}", "new_string": "func main() { println(1) }"}); res.IsError {
		t.Fatalf("editing the copy: %s", textOf(res))
	}
	if got := changedPaths(t, p); got["code/src/main.go"] != "modified" || len(got) != 1 {
		t.Errorf("changes %v", got)
	}
	if after := hostManifest(t, folder); !sameMap(before, after) {
		t.Fatal("the host folder changed")
	}

	tight := start(t, startOptions{args: []string{"--mount", folder + ":code:copy,max_bytes=10", "--allowed-root", root}})
	res = tight.call("ls", map[string]any{"path": "code"})
	if !res.IsError || !strings.Contains(textOf(res), "max_bytes (10 bytes)") {
		t.Fatalf("a copy over its budget: %v %s", res.IsError, textOf(res))
	}
}

func TestClientRootsAreMountedUnderAllowedRoots(t *testing.T) {
	root, folder := project(t)
	outside := t.TempDir()
	p := start(t, startOptions{roots: []string{folder, outside}, args: []string{"--mount-roots", "--allowed-root", root}})
	res := p.call("ls", map[string]any{"path": "proj/src"})
	if res.IsError || !strings.Contains(textOf(res), "main.go") {
		t.Fatalf("the client's root is not mounted: %s", textOf(res))
	}
	p.waitLog(5*time.Second, "a client root is not mounted", map[string]any{"root": outside})
	if res := p.call("ls", map[string]any{"path": filepath.Base(outside)}); !res.IsError {
		t.Errorf("a root outside the allowed roots was mounted")
	}
	if text := p.promptText(); !strings.Contains(text, "`"+folder+"` at `/workspace/proj` (overlay)") {
		t.Errorf("the prompt does not list the client's root:\n%s", text)
	}
}

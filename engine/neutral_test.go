package engine_test

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The module's packages are engine-neutral but for the edge, where the
// engine is chosen (see the package doc), and the engines themselves.
const module = "github.com/wink-mcp/wink-mcp"

// edge are the packages that may link an engine: the command builds one,
// and the benchmark measures the Podman bindings against the agent.
var edge = []string{module + "/cmd/wink-mcp", module + "/cmd/wink-bench"}

// neutralEngineDirs are the packages under engine/ that are not engines.
var neutralEngineDirs = []string{module + "/engine", module + "/engine/enginetest"}

// engineLibraries are the prefixes of the client libraries of engines:
// the Podman bindings and what they bring.
var engineLibraries = []string{"github.com/containers/", "go.podman.io/", "github.com/docker/"}

// listed is one package of `go list -json`.
type listed struct {
	ImportPath string
	Imports    []string
	Error      *struct{ Err string }
	// GoFiles and CgoFiles are what a build compiles, IgnoredGoFiles what
	// its build constraints leave out.
	GoFiles, CgoFiles, IgnoredGoFiles []string
}

// loadError says why p cannot be built: go list's error, or a package
// whose every file the build constraints leave out (go list lists one a
// package imports without an error; the build fails on it).
func (p listed) loadError() string {
	switch {
	case p.Error != nil:
		return p.Error.Err
	case len(p.GoFiles) == 0 && len(p.CgoFiles) == 0 && len(p.IgnoredGoFiles) > 0:
		return "build constraints exclude all its Go files (" + strings.Join(p.IgnoredGoFiles, ", ") + ")"
	}
	return ""
}

// TestNeutralPackagesLinkNoEngine fails when a package that must stay
// engine-neutral depends, itself or through its tests, on an engine or an
// engine's client library, the way tailscale's tstest/deptest does: such
// a package would need the engine's build tags again to build, vet and
// test, and would tie every package above it to that engine. It also
// fails when any package of the module does not load without build tags.
func TestNeutralPackagesLinkNoEngine(t *testing.T) {
	openModuleSources(t)
	graph := map[string]listed{}
	var neutral []string
	for _, p := range goList(t, "-deps", "-test", module+"/...") {
		graph[p.ImportPath] = p
		if base := basePackage(p.ImportPath); base == p.ImportPath && inModule(base) && !isEngine(base) && !slices.Contains(edge, base) {
			neutral = append(neutral, base)
		}
	}
	if len(neutral) < 10 || !slices.Contains(neutral, module+"/workspace") {
		t.Fatalf("found only %d engine-neutral packages (%v): is the module layout what this test thinks?", len(neutral), neutral)
	}
	// Each package once, by its shortest chain: its tests' variants and
	// the packages above it would only repeat it.
	chains, loadErrs := map[string][]string{}, map[string]string{}
	for node, p := range graph {
		if err := p.loadError(); err != "" {
			loadErrs[node] = err
		}
		base := basePackage(node)
		if !slices.Contains(neutral, base) {
			continue
		}
		if chain := importChain(graph, node, func(n string) bool { return isEngine(basePackage(n)) }); chain != nil && (chains[base] == nil || len(chain) < len(chains[base])) {
			chains[base] = chain
		}
	}
	for _, base := range slices.Sorted(maps.Keys(chains)) {
		t.Errorf("%s depends on an engine: %s; build the engine in cmd/wink-mcp and hand it down as an engine.Engine", base, strings.Join(chains[base], " -> "))
	}
	// An engine's packages are left out of a build without its tags (see
	// engine/podman); one that is not breaks `go vet ./...` without them.
	for _, node := range slices.Sorted(maps.Keys(loadErrs)) {
		var chain []string
		for _, root := range slices.Sorted(maps.Keys(graph)) {
			if c := importChain(graph, root, func(n string) bool { return n == node }); inModule(root) && c != nil && (chain == nil || len(c) < len(chain)) {
				chain = c
			}
		}
		t.Errorf("%s does not load without build tags: %s (%s)", node, loadErrs[node], strings.Join(chain, " -> "))
	}
}

// inModule says whether the package at path is this module's.
func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// importChain returns the shortest import chain from root to a package
// target accepts, or nil when there is none.
func importChain(graph map[string]listed, root string, target func(string) bool) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		node := queue[0]
		queue = queue[1:]
		if target(node) {
			var chain []string
			for n := node; n != ""; n = from[n] {
				chain = append([]string{n}, chain...)
			}
			return chain
		}
		for _, next := range graph[node].Imports {
			if _, seen := from[next]; !seen {
				from[next] = node
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// isEngine says whether the package at path is an engine or belongs to
// an engine's client library.
func isEngine(path string) bool {
	if strings.HasPrefix(path, module+"/engine/") && !slices.Contains(neutralEngineDirs, path) {
		return true
	}
	return slices.ContainsFunc(engineLibraries, func(prefix string) bool { return strings.HasPrefix(path, prefix) })
}

// basePackage is the package a `go list -test` entry is a variant of:
// "p [p.test]", "p_test [p.test]" and "p.test" are all p.
func basePackage(path string) string {
	path, _, _ = strings.Cut(path, " [")
	if strings.HasSuffix(path, ".test") {
		return strings.TrimSuffix(path, ".test")
	}
	return strings.TrimSuffix(path, "_test")
}

// openModuleSources opens every Go file of the module and its go.mod, so
// that go test caches this test's result only until one of them changes:
// go list reads them in another process, which the cache does not see.
func openModuleSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") && path != filepath.Join("..", "go.mod"):
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		return f.Close()
	})
	if err != nil {
		t.Fatalf("opening the module's sources: %v", err)
	}
}

// goList runs `go list -e -json` with args, with no build tags (the
// point: neutral packages need none) and without cgo, from the module's
// root.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goTool, append([]string{"list", "-e", "-json=ImportPath,Imports,Error,GoFiles,CgoFiles,IgnoredGoFiles"}, args...)...)
	cmd.Dir = ".."
	// No tags from the environment either; and no cgo, as the Makefile.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("running go list to read the import graph (is the go tool on PATH?): %v", err)
	}
	var pkgs []listed
	for dec := json.NewDecoder(out); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v\n%s", err, stderr.String())
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return pkgs
}

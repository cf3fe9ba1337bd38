package repocheck

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The limits of TestNoFileOrTypeOutgrowsItsRoom: a file a reader holds in
// a few screens, a type whose job fits in one sentence.
const (
	maxFileLines   = 500
	maxTypeMethods = 40
)

// TestNoFileOrTypeOutgrowsItsRoom checks every Go file of the module, as
// `go list ./...` finds the packages (tests and their testdata included,
// generated and third-party code excluded), against maxFileLines, and every
// type declared outside tests against maxTypeMethods: a type that has
// outgrown it wants a room of its own (see ARCHITECTURE.md).
func TestNoFileOrTypeOutgrowsItsRoom(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) == 0 {
		t.Fatal("go list ./... found no packages")
	}
	for _, p := range pkgs {
		files, err := filepath.Glob(filepath.Join(p.Dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		methods := map[string]int{}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
				t.Errorf("%s has %d lines, over %d: split it by what its parts do", f, n, maxFileLines)
			}
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			counts, err := methodCounts(f, src)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			for typ, n := range counts {
				methods[typ] += n
			}
		}
		for _, typ := range sortedKeys(methods) {
			if n := methods[typ]; n > maxTypeMethods {
				t.Errorf("%s.%s has %d methods, over %d: give a part that owns its own state a type (or a package) of its own",
					p.ImportPath, typ, n, maxTypeMethods)
			}
		}
	}
}

// TestMethodCounts checks the counting itself, so that the check above
// cannot pass by counting nothing: pointer and value receivers, generic
// receivers, and functions that are not methods.
func TestMethodCounts(t *testing.T) {
	src := `package p
type T struct{}
type G[X any] struct{}
func (T) A() {}
func (t *T) B() {}
func (g *G[X]) C() {}
func (g G[X]) D() {}
func F() {}
`
	got, err := methodCounts("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got["T"] != 2 || got["G"] != 2 || len(got) != 2 {
		t.Errorf("methodCounts = %v, want T:2 G:2", got)
	}
}

// methodCounts returns how many methods file declares on each type.
func methodCounts(file string, src []byte) (map[string]int, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
			continue
		}
		if name := receiverType(fd.Recv.List[0].Type); name != "" {
			counts[name]++
		}
	}
	return counts, nil
}

// receiverType is the name of the type a receiver expression names.
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package repocheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listedPackage is what `go list -json` says about a package that the
// package-doc rule needs.
type listedPackage struct {
	ImportPath string
	Dir        string
	Name       string
	Error      *struct{ Err string }
}

// TestEveryPackageHasADoc checks that each package of the module, as
// `go list ./...` finds them (so a package added tomorrow is covered),
// has a package doc: "Package NAME ..." for a library, "Command ..." for
// a main package.
func TestEveryPackageHasADoc(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) == 0 {
		t.Fatal("go list ./... found no packages")
	}
	for _, p := range pkgs {
		if p.Error != nil {
			t.Errorf("%s: go list: %s", p.ImportPath, p.Error.Err)
			continue
		}
		doc, err := packageDoc(p.Dir, p.Name)
		if err != nil {
			t.Errorf("%s: %v", p.ImportPath, err)
			continue
		}
		if msg := docProblem(p.Name, doc); msg != "" {
			t.Errorf("%s (%s): %s", p.ImportPath, p.Dir, msg)
		}
	}
}

// TestDocProblem checks the rule itself on docs that keep and break it,
// so that the check above cannot pass by accepting anything.
func TestDocProblem(t *testing.T) {
	tests := []struct {
		name, pkg, doc string
		ok             bool
	}{
		{name: "library", pkg: "wire", doc: "Package wire defines the messages.\n", ok: true},
		{name: "command", pkg: "main", doc: "Command wink-mcp is an MCP server.\n", ok: true},
		{name: "missing", pkg: "wire", doc: ""},
		{name: "blank", pkg: "wire", doc: " \n"},
		{name: "other name", pkg: "wire", doc: "Package wires defines the messages.\n"},
		{name: "no name", pkg: "wire", doc: "Defines the messages.\n"},
		{name: "command without Command", pkg: "main", doc: "Package main is an MCP server.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := docProblem(tt.pkg, tt.doc); (got == "") != tt.ok {
				t.Errorf("docProblem(%q, %q) = %q, want ok=%v", tt.pkg, tt.doc, got, tt.ok)
			}
		})
	}
}

// listPackages runs `go list -e -json ./...` at the module's root.
func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatalf("finding the module root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("finding the module root: %v", err)
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,Name,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running go list ./...: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// packageDoc returns the package doc of package name in dir: the doc
// comment on its package clause in any of its non-test files, whatever
// their build constraints, or, for a package of test files only (such as
// integration), in one of those.
func packageDoc(dir, name string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("reading the package's folder: %w", err)
	}
	var testDoc string
	sawCode := false
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil,
			parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", fmt.Errorf("parsing %s: %w", e.Name(), err)
		}
		if f.Name.Name != name {
			continue // an external test package, or a program kept out of the build
		}
		doc := f.Doc.Text()
		if strings.HasSuffix(e.Name(), "_test.go") {
			if testDoc == "" {
				testDoc = doc
			}
			continue
		}
		sawCode = true
		if doc != "" {
			return doc, nil
		}
	}
	if sawCode {
		return "", nil
	}
	return testDoc, nil
}

// docProblem says what is wrong with doc as the package doc of package
// name, or "" when nothing is.
func docProblem(name, doc string) string {
	doc = strings.TrimSpace(doc)
	switch {
	case doc == "":
		return "no package doc: add a comment before one file's package clause saying what the package is for"
	case name == "main" && !strings.HasPrefix(doc, "Command "):
		return fmt.Sprintf("the package doc of a command starts %q, not with \"Command \"", firstWords(doc))
	case name != "main" && !strings.HasPrefix(doc, "Package "+name+" "):
		return fmt.Sprintf("the package doc starts %q, not with \"Package %s \"", firstWords(doc), name)
	}
	return ""
}

// firstWords returns the start of doc, for a message.
func firstWords(doc string) string {
	if len(doc) > 40 {
		return doc[:40] + "..."
	}
	return doc
}

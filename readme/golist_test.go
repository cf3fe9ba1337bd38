package readme

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Package is one package of the module as the package map shows it: its
// path inside the module and the first sentence of its package doc.
type Package struct {
	Path     string
	Synopsis string
}

// listedPackage is the part of `go list -json` that Packages reads.
type listedPackage struct {
	ImportPath     string
	Dir            string
	Module         *struct{ Path string }
	GoFiles        []string
	IgnoredGoFiles []string
	TestGoFiles    []string
}

// Packages lists the packages of the Go module at root with `go list`, in
// its order, each with the first sentence of its package doc: the doc of
// its non-test files, or, for a package of tests only, of its test files.
// A package without a doc has an empty Synopsis.
func Packages(ctx context.Context, root string) ([]Package, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the module's packages: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's answer: %w", err)
		}
		if p.Module == nil {
			return nil, fmt.Errorf("reading go list's answer: %s is in no module", p.ImportPath)
		}
		synopsis, err := packageSynopsis(p.Dir, append(p.GoFiles, p.IgnoredGoFiles...))
		if err == nil && synopsis == "" {
			synopsis, err = packageSynopsis(p.Dir, p.TestGoFiles)
		}
		if err != nil {
			return nil, err
		}
		path := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, p.Module.Path), "/")
		pkgs = append(pkgs, Package{Path: path, Synopsis: synopsis})
	}
	return pkgs, nil
}

// packageSynopsis returns the first sentence of the package doc comment
// that one of files (in dir) carries, the first by name, or "".
func packageSynopsis(dir string, files []string) (string, error) {
	fset := token.NewFileSet()
	for _, name := range slices.Sorted(slices.Values(files)) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", fmt.Errorf("reading the package doc of %s: %w", dir, err)
		}
		if f.Doc != nil {
			return new(doc.Package).Synopsis(f.Doc.Text()), nil
		}
	}
	return "", nil
}

// markdownText escapes the characters of plain text that Markdown would
// read as emphasis, links, markup or a table's cell boundary.
var markdownText = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, "|", `\|`)

// PackageMap renders packages as the Markdown table of ARCHITECTURE.md:
// each package linked to its folder, with its synopsis.
func PackageMap(packages []Package) string {
	var b strings.Builder
	b.WriteString("| package | what it is for (its package doc) |\n| --- | --- |\n")
	for _, p := range packages {
		synopsis := p.Synopsis
		if synopsis == "" {
			synopsis = "(no package doc)"
		}
		name := p.Path
		if name == "" {
			name = "."
		}
		fmt.Fprintf(&b, "| [`%s`](%s/) | %s |\n", name, name, markdownText.Replace(synopsis))
	}
	return b.String()
}

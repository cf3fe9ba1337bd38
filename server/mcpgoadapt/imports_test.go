package mcpgoadapt

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyMCPGoAndTheStandardLibrary keeps this package an adapter
// of mcp-go: what it knows of wink-mcp comes in through its arguments, so
// the server and its workspaces stay out of it.
func TestImportsOnlyMCPGoAndTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && !strings.HasPrefix(path, "github.com/mark3labs/mcp-go/") {
				t.Errorf("%s imports %s: only the standard library and mcp-go belong here", file, path)
			}
		}
	}
}

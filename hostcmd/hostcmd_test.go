package hostcmd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestEnvPassesOnlyWhatIsNamed(t *testing.T) {
	t.Parallel()
	environ := []string{
		"PATH=/home/u/bin:/usr/bin", "HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/1000", "LANG=de_DE.UTF-8", "LC_ALL=de_DE.UTF-8",
		"CONTAINER_HOST=unix:///run/user/1000/podman/podman.sock", "CONTAINER_CONNECTION=mine", "CONTAINER_SSHKEY=/k",
		"CONTAINERS_CONF=/c.conf", "CONTAINERS_STORAGE_CONF=/s.conf", "PODMAN_CONNECTIONS_CONF=/p.json",
		"MKE2FS_CONFIG=/m.conf", "LIBMOUNT_FSTAB=/f", "GIT_DIR=/elsewhere", "GIT_CONFIG_GLOBAL=/home/u/.gitconfig-work",
	}
	tests := []struct {
		name string
		keep []string
		want []string
	}{
		{"nothing named", nil, []string{"PATH=/home/u/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin", "LC_ALL=C"}},
		{"podman", Podman, []string{"PATH=/home/u/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin", "LC_ALL=C",
			"HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/1000"}},
		{"git", GitConfig, []string{"PATH=/home/u/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin", "LC_ALL=C",
			"HOME=/home/u", "GIT_CONFIG_GLOBAL=/home/u/.gitconfig-work"}},
		{"PATH and the locale are the server's", []string{"PATH", "LC_ALL"}, []string{"PATH=/home/u/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin", "LC_ALL=C"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Env(environ, tt.keep...); !slices.Equal(got, tt.want) {
				t.Errorf("Env = %q, want %q", got, tt.want)
			}
		})
	}
	if got := Env(nil); got[0] != "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" {
		t.Errorf("without a PATH: %q", got)
	}
}

// helperCommandRooms may start processes the plain way: the agent runs
// inside the container, with the environment the server gives each command,
// and the benchmark drives the binary as a client would.
var helperCommandRooms = []string{"hostcmd", "agent", "cmd/wink-bench"}

// Every program the server starts on this machine goes through Command:
// a new exec.Command elsewhere would inherit the user's environment again.
func TestEveryHelperCommandGoesThroughHostcmd(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." || slices.Contains(helperCommandRooms, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		execName := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os/exec" {
				execName = "exec"
				if imp.Name != nil {
					execName = imp.Name.Name
				}
			}
		}
		if execName == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == execName && (n.Sel.Name == "Command" || n.Sel.Name == "CommandContext" || n.Sel.Name == "Cmd") {
					found = append(found, rel+": exec."+n.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("programs started with the inherited environment (use hostcmd.Command): %v", found)
	}
}

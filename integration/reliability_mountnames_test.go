package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/wink-mcp/wink-mcp/tools"
)

// mountName is a host folder name with characters that a mount's option
// syntax (Podman's `-v SRC:DST:OPTIONS`, the kernel's overlay options)
// gives a meaning to, or that a path rule refuses.
type mountName struct {
	what, name string
}

var mountNames = []mountName{
	{"comma", "a,b"},
	{"an option after a comma", "a,upperdir=x"},
	{"backslash", `a\b`},
	{"colon", "a:b"},
	{"colon and O", "a:O"},
	{"equals", "a=b"},
	{"space", "a b"},
	{"hash", "a#b"},
	{"quotes", `a'b"c`},
	{"semicolon", "a;b"},
	{"percent and dollar", "a%b$c"},
	{"brackets and star", "a[b]*"},
	{"non-ASCII", "é"},
	{"tab", "a\tb"},
	{"newline", "a\nb"},
}

// workspaceName is name as a workspace path may hold it ("" when the
// path rules refuse it: it is mounted under a plain name then).
func workspaceName(name string) string {
	for _, r := range name {
		if r > unicode.MaxASCII || r < 0x20 || r == 0x7f {
			return ""
		}
	}
	return name
}

// mountNameOutcome tries one folder name in every mount mode through the
// binary and says what broke ("" for nothing).
func mountNameOutcome(t *testing.T, n mountName) string {
	root := t.TempDir()
	host := filepath.Join(root, n.name)
	must(t, os.Mkdir(host, 0o755))
	must(t, os.WriteFile(filepath.Join(host, "f.txt"), []byte("hi\n"), 0o644))
	must(t, os.Lchown(host, hostUID, hostUID))
	must(t, os.Lchown(filepath.Join(host, "f.txt"), hostUID, hostUID))
	arg := host
	if strings.Contains(n.name, ":") {
		// --mount cannot carry a ':' in its host path; a link to the
		// folder can, and the server mounts the folder it resolves to.
		arg = filepath.Join(root, "link")
		must(t, os.Symlink(host, arg))
	}
	ws := workspaceName(n.name)
	ov, ro, cp := ws, "ro-"+ws, "cp-"+ws
	flags := []string{"--allowed-root", root, "--mount", arg, "--mount", arg + ":" + ro + ":ro", "--mount", arg + ":" + cp + ":copy"}
	switch {
	case ws == "":
		ov, ro, cp = "ov", "ro-x", "cp-x"
		flags = []string{"--allowed-root", root, "--mount", arg + ":ov", "--mount", arg + ":ro-x:ro", "--mount", arg + ":cp-x:copy"}
	case strings.Contains(ws, ":"):
		ro, cp = "ro-x", "cp-x"
		flags = []string{"--allowed-root", root, "--mount", arg, "--mount", arg + ":ro-x:ro", "--mount", arg + ":cp-x:copy"}
	}
	p := start(t, startOptions{args: append(flags, unpooled...)})
	for _, dir := range []string{ov, ro, cp} {
		res := p.call("podman_shell", map[string]any{"command": []string{"cat", dir + "/f.txt"}})
		var out tools.ShellResult
		if res.IsError {
			return fmt.Sprintf("reading %s/f.txt: %s", dir, textOf(res))
		}
		decodeStructured(t, res, &out)
		if out.Stdout != "hi\n" {
			return fmt.Sprintf("%s/f.txt reads %q", dir, out.Stdout)
		}
	}
	for dir, wantOK := range map[string]bool{ov: true, cp: true, ro: false} {
		out := p.run("sh", "-c", `echo new > "$1/g.txt"`, "sh", dir)
		if (out.ExitCode == 0) != wantOK {
			return fmt.Sprintf("writing %s/g.txt: exit %d, %s", dir, out.ExitCode, out.Stderr)
		}
	}
	var changes tools.WorkspaceChangesResult
	decodeStructured(t, p.call("workspace_changes", nil), &changes)
	var got []string
	for _, c := range changes.Changes {
		got = append(got, c.Path)
	}
	slices.Sort(got)
	if want := []string{cp + "/g.txt", ov + "/g.txt"}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		return fmt.Sprintf("workspace_changes lists %q, want %q", got, want)
	}
	out := t.TempDir()
	if r := exportCLI(t, p.cache, "--out", out); r.code != 0 || !fileExists(filepath.Join(out, ov+".patch")) || !fileExists(filepath.Join(out, cp+".patch")) {
		return fmt.Sprintf("wink-mcp export --out: exit %d, %s", r.code, r.stderr)
	}
	p.endSession()
	if entries, _ := os.ReadDir(host); len(entries) != 1 {
		return fmt.Sprintf("the host folder holds %d entries after the session, want its one file", len(entries))
	}
	return ""
}

// TestReliabilityMountNames mounts host folders whose names hold the
// characters mount option syntaxes give a meaning to, in every mount mode
// (overlay, ro, copy) and as a client's root, through the binary and real
// Podman: each is read, written where it may be, listed and exported, and
// the host folder never changes. A cache directory whose path an overlay's
// options cannot carry is refused at start-up, naming the flag, the path
// and the character.
func TestReliabilityMountNames(t *testing.T) {
	tried, broken := 0, 0
	for _, n := range mountNames {
		t.Run(n.what, func(t *testing.T) {
			tried++
			if why := mountNameOutcome(t, n); why != "" {
				broken++
				t.Errorf("a folder named %q: %s", n.name, why)
			}
		})
	}
	t.Run("client roots", func(t *testing.T) {
		for _, name := range []string{"r,1", `r\2`, "r:3"} {
			tried++
			root := t.TempDir()
			folder := filepath.Join(root, name)
			must(t, os.Mkdir(folder, 0o755))
			must(t, os.WriteFile(filepath.Join(folder, "f.txt"), []byte("hi\n"), 0o644))
			must(t, os.Lchown(folder, hostUID, hostUID))
			p := start(t, startOptions{roots: []string{folder}, args: append([]string{"--mount-roots", "--allowed-root", root}, unpooled...)})
			res := p.call("podman_shell", map[string]any{"command": []string{"sh", "-c", `cat "$1/f.txt" && echo new > "$1/g.txt"`, "sh", name}})
			if res.IsError || !strings.Contains(textOf(res), "hi") {
				broken++
				t.Errorf("a client root named %q: %s", name, textOf(res))
			}
		}
	})
	t.Run("cache directories", func(t *testing.T) {
		_, folder := project(t)
		root := filepath.Dir(folder)
		for _, tc := range []struct {
			ch    string
			mount string
			ok    bool
		}{{",", folder, false}, {`\`, folder, false}, {",", folder + ":copy", true}, {`\`, folder + ":ro", true}, {":", folder, true}, {"=", folder, true}} {
			tried++
			cache := filepath.Join(t.TempDir(), "c"+tc.ch+"d")
			must(t, os.Mkdir(cache, 0o700))
			args := []string{"--allowed-root", root, "--mount", tc.mount}
			if !tc.ok {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				cmd := exec.CommandContext(ctx, winkBin, append([]string{"--cache-dir", cache, "--podman-url", "unix://" + podmanSocket}, args...)...)
				out, err := cmd.CombinedOutput()
				cancel()
				if err == nil || !strings.Contains(string(out), "--cache-dir "+cache+" holds '"+tc.ch+"'") {
					broken++
					t.Errorf("--cache-dir %q with an overlay: %v; want a refusal naming the flag, the path and %q:\n%s", cache, err, tc.ch, out)
				}
				continue
			}
			p := start(t, startOptions{cache: cache, args: append(args, unpooled...)})
			if res := p.call("podman_shell", map[string]any{"command": []string{"cat", "proj/README.md"}}); res.IsError {
				broken++
				t.Errorf("--cache-dir %q, --mount %s: %s", cache, tc.mount, textOf(res))
			}
		}
	})
	recordPromise(promiseFigure{Class: "host folders named with what mount syntaxes give a meaning to (, : \\ = space # quotes ; % $ [ * é tab newline, an option after a comma), " +
		"in every mount mode (overlay, ro, copy) and as client roots, and cache directories holding , \\ : =",
		Tried: tried, Broken: broken,
		Measured: fmt.Sprintf("%d tried: each folder read, written where it may be, listed, exported and left unchanged, or refused at start-up naming the flag, path and character; %d broke", tried, broken)})
}

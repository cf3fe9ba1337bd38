package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/tools"
)

// plantScript makes, as the sandbox user, every kind of entry a checkpoint
// must keep exactly, in /workspace and in a mounted folder (proj).
const plantScript = plantWorkspace + "printf 'edited\\n' >> proj/README.md && rm proj/src/old.go && mkdir proj/newdir && printf n > proj/newdir/n.txt\n"

// plantWorkspace is plantScript without the mounted folder.
const plantWorkspace = `set -e
mkdir -p src/pkg empty/nested ro-dir "sp ace"
printf 'package main\n' > src/main.go
printf 'x' > src/pkg/a.txt
chmod 0755 src/main.go
printf 'secret' > src/private && chmod 0600 src/private
printf 'g' > setgid && chmod 2755 setgid
mkdir sticky && chmod 1777 sticky
printf 'in ro' > ro-dir/f && chmod 0555 ro-dir
ln -s pkg/a.txt src/rel-link
ln -s /etc/passwd abs-link
ln -s does/not/exist dangling
mkfifo pipe
printf 'linked' > hard1 && ln hard1 hard2
printf 'bad name' > "$(printf 'bad\377name')"
printf 'nl' > "$(printf 'new\nline')"
printf 'wh' > .wh.README && printf 'opq' > .wh..wh..opq
head -c 300000 /dev/urandom > "sp ace/big.bin"
`

// listScript describes every entry under /workspace, as the container sees
// it: path, type and mode, size, and content digest or link target.
const listScript = `find . -path ./proj/.git -prune -o -print | LC_ALL=C sort | while IFS= read -r f; do
  stat -c '%n|%A|%s' "$f"
  if [ -L "$f" ]; then readlink "$f"; elif [ -f "$f" ]; then md5sum < "$f"; fi
done`

// listingDigest is a digest of listing, for trees whose listing passes
// what one command's output keeps, with its line count.
func (p *proc) listingDigest() string {
	p.t.Helper()
	res := p.run("sh", "-c", "("+listScript+") > /tmp/listing && wc -l < /tmp/listing && md5sum < /tmp/listing")
	if res.ExitCode != 0 {
		p.t.Fatalf("listing the workspace: %s", res.Stderr)
	}
	return strings.Join(strings.Fields(res.Stdout), " ")
}

// listing is the container's view of /workspace, through listScript.
func (p *proc) listing() string {
	p.t.Helper()
	res := p.run("sh", "-c", listScript)
	if res.ExitCode != 0 || res.StdoutBytes > int64(len(res.Stdout)) {
		p.t.Fatalf("listing the workspace: exit %d, %d bytes: %s", res.ExitCode, res.StdoutBytes, res.Stderr)
	}
	return res.Stdout
}

// TestCheckpointAndRestoreEveryEntry saves a workspace holding every kind
// of entry, with a changed overlay mount, wrecks it (rm -rf of everything
// included), and restores it, on every transport: the container's view
// must be what it was, and the host folder never changes.
func TestCheckpointAndRestoreEveryEntry(t *testing.T) {
	eachTransport(t, func(t *testing.T, transport string) {
		root, folder := project(t)
		hostBefore := treeDigest(t, folder)
		p := start(t, startOptions{transport: transport, args: []string{"--allowed-root", root, "--mount", folder}})
		if res := p.run("sh", "-c", plantScript); res.ExitCode != 0 {
			t.Fatalf("planting: %s", res.Stderr)
		}
		want := p.listing()
		var cp tools.WorkspaceCheckpointResult
		decodeStructured(t, p.call("workspace_checkpoint", map[string]any{"message": "planted"}), &cp)
		if cp.Checkpoint.ID != "c1" || cp.Checkpoint.Files < 10 {
			t.Fatalf("checkpoint = %+v", cp)
		}
		changes := textOf(p.call("workspace_changes", nil))
		// Everything goes but the mount point itself, which rm cannot remove.
		if res := p.run("sh", "-c", "chmod -R u+w .; rm -rf ./* ./.wh*; printf other > new.txt && mkdir -p deep/er && chmod 0500 deep && ls -A proj | wc -l"); res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "0" {
			t.Fatalf("wrecking: %s", res.Stderr)
		}
		diff := textOf(p.call("workspace_checkpoint_diff", map[string]any{"from": "c1", "path": "src"}))
		if !strings.Contains(diff, "deleted file mode 100755") || !strings.Contains(diff, "src/main.go") || strings.Contains(diff, "new.txt") {
			t.Errorf("diff c1..now under src:\n%s", diff)
		}
		var r tools.WorkspaceRestoreResult
		decodeStructured(t, p.call("workspace_restore", map[string]any{"checkpoint": "c1"}), &r)
		if r.Before != "c2" || r.Written == 0 || r.Removed == 0 {
			t.Errorf("restore = %+v", r)
		}
		if got := p.listing(); got != want {
			t.Errorf("after the restore the workspace differs:\n%s", lineDiff(want, got))
		}
		if got := textOf(p.call("workspace_changes", nil)); got != changes {
			t.Errorf("the mounted folder's changes after the restore:\n%s\nwant:\n%s", got, changes)
		}
		if treeDigest(t, folder) != hostBefore {
			t.Error("the host folder changed")
		}
		// The restore can be undone.
		decodeStructured(t, p.call("workspace_restore", map[string]any{"checkpoint": "c2"}), &r)
		if got := p.run("cat", "new.txt").Stdout; got != "other" {
			t.Errorf("undoing the restore: new.txt = %q", got)
		}
		list := textOf(p.call("workspace_checkpoints", nil))
		if !strings.Contains(list, "planted") || !strings.Contains(list, "before restore to c1") {
			t.Errorf("checkpoints:\n%s", list)
		}
	})
}

// lineDiff names the lines only one side has.
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for l := range w {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for l := range g {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// treeDigest describes a host folder: every path, mode, size and content.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + info.Mode().String())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		b.WriteString("\n")
		return nil
	})
	must(t, err)
	return b.String()
}

// TestCheckpointToolsBadInput sends each checkpoint tool what a careless
// or hostile model would, through the real server.
func TestCheckpointToolsBadInput(t *testing.T) {
	p := start(t, startOptions{})
	// A session that holds no work yet is told the same of every bad handle.
	for _, handle := range []string{strings.Repeat("0", 64), "x", "", strings.Repeat("f", 200)} {
		if res := p.call("workspace_attach", map[string]any{"handle": handle}); !res.IsError || !strings.Contains(textOf(res), "the handle is not accepted") {
			t.Errorf("attach %q = %q", handle, textOf(res))
		}
	}
	p.run("sh", "-c", "echo x > f")
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"workspace_restore", map[string]any{"checkpoint": "c1"}, `no such checkpoint "c1"`},
		{"workspace_restore", map[string]any{"checkpoint": "c0"}, "must be a checkpoint id such as c1"},
		{"workspace_restore", map[string]any{"checkpoint": "../../etc"}, "must be a checkpoint id such as c1"},
		{"workspace_restore", map[string]any{}, "checkpoint: is required"},
		{"workspace_checkpoint_diff", map[string]any{"from": "c7"}, `no such checkpoint "c7"`},
		{"workspace_checkpoint_diff", map[string]any{"from": "c1", "to": "../x"}, "to: must be a checkpoint id"},
		{"workspace_checkpoint_delete", map[string]any{"checkpoints": []string{"c1"}}, `no such checkpoint "c1"`},
		{"workspace_checkpoint", map[string]any{"message": strings.Repeat("m", 501)}, "at most 500"},
		{"workspace_attach", map[string]any{"handle": strings.Repeat("0", 64)}, "this session's workspace holds work"},
		{"workspace_handoff", map[string]any{"expires_in_seconds": -1}, "must be at least 1"},
	} {
		res := p.call(tc.tool, tc.args)
		if !res.IsError || !strings.Contains(textOf(res), tc.want) {
			t.Errorf("%s %v = %q (error %v), want an error containing %q", tc.tool, tc.args, textOf(res), res.IsError, tc.want)
		}
	}
	if got := p.run("cat", "f").Stdout; got != "x\n" {
		t.Errorf("bad calls changed the workspace: f = %q", got)
	}
}

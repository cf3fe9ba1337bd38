package mounts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/internal/testtree"
)

func TestResolveMountsRefusesWhatItShould(t *testing.T) {
	root, folder := testtree.Host(t, map[string]string{"a.txt": "a"})
	outside := t.TempDir()
	file := filepath.Join(folder, "a.txt")
	link := filepath.Join(root, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for _, tc := range []struct {
		name    string
		mounts  []Mount
		roots   []string
		wantErr string
	}{
		{name: "no allowed root", mounts: []Mount{{HostPath: folder}}, wantErr: "add --allowed-root"},
		{name: "outside the roots", mounts: []Mount{{HostPath: outside}}, roots: []string{root}, wantErr: "outside the allowed roots"},
		{name: "a link out of the root", mounts: []Mount{{HostPath: link}}, roots: []string{root}, wantErr: "outside the allowed roots"},
		{name: "missing", mounts: []Mount{{HostPath: filepath.Join(root, "nope")}}, roots: []string{root}, wantErr: "does not exist"},
		{name: "a file", mounts: []Mount{{HostPath: file}}, roots: []string{root}, wantErr: "not a directory"},
		{name: "missing root", mounts: []Mount{{HostPath: folder}}, roots: []string{filepath.Join(root, "nope")}, wantErr: "--allowed-root"},
		{name: "same path twice", mounts: []Mount{{HostPath: folder}, {HostPath: outside, Path: "proj"}}, roots: []string{root, outside}, wantErr: "overlaps"},
		{name: "nested paths", mounts: []Mount{{HostPath: folder, Path: "a"}, {HostPath: outside, Path: "a/b"}}, roots: []string{root, outside}, wantErr: "overlaps"},
		{name: "workspace root", mounts: []Mount{{HostPath: folder, Path: "."}}, roots: []string{root}, wantErr: "/workspace itself"},
		{name: "bad workspace path", mounts: []Mount{{HostPath: folder, Path: "../up"}}, roots: []string{root}, wantErr: "leaves the workspace"},
		{name: "filters without copy", mounts: []Mount{{HostPath: folder, Include: []string{"*.go"}}}, roots: []string{root}, wantErr: "copy mounts only"},
		{name: "bad glob", mounts: []Mount{{HostPath: folder, Mode: Copy, Include: []string{"[a-"}}}, roots: []string{root}, wantErr: `include "[a-"`},
		{name: "the cache", mounts: []Mount{{HostPath: cache}}, roots: []string{cache}, wantErr: "cache directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cacheDir := filepath.Join(cache, "c")
			if tc.name == "the cache" {
				cacheDir = cache
			}
			_, err := MakePlan(tc.mounts, false, tc.roots, cacheDir, "")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
	plan, err := MakePlan([]Mount{{HostPath: folder + "/"}, {HostPath: outside, Path: "./docs/", Mode: ReadOnly}},
		false, []string{root, outside}, cache, "1000:1000")
	if err != nil {
		t.Fatal(err)
	}
	got := plan.Mounts
	if got[0].Path != "proj" || got[0].Mode != Overlay || got[1].Path != "docs" || got[1].HostPath != outside {
		t.Errorf("resolved %+v", got)
	}
}

func TestWritableMountsNeedOneNonRootOwner(t *testing.T) {
	m := func(uid int, mode Mode) Resolved {
		return Resolved{Mount: Mount{HostPath: "/h", Path: "p", Mode: mode}, UID: uid, GID: uid}
	}
	if o, err := writableOwner([]Resolved{m(1000, Overlay), m(0, ReadOnly), m(1000, Overlay)}); err != nil || o != "1000:1000" {
		t.Errorf("owner %q, %v", o, err)
	}
	if _, err := writableOwner([]Resolved{m(0, Overlay)}); err == nil || !strings.Contains(err.Error(), "owned by root") {
		t.Errorf("a root-owned writable mount: %v", err)
	}
	if _, err := writableOwner([]Resolved{m(1000, Overlay), m(1001, Overlay)}); err == nil || !strings.Contains(err.Error(), "one user") {
		t.Errorf("two owners: %v", err)
	}
	if o, err := writableOwner([]Resolved{m(0, Copy)}); err != nil || o != "" {
		t.Errorf("a copy mount needs no owner: %q, %v", o, err)
	}
}

package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/workspace"
)

func TestParseMount(t *testing.T) {
	home, _ := os.UserHomeDir()
	for _, tc := range []struct {
		name, spec string
		want       workspace.Mount
		wantErr    string
	}{
		{name: "host only", spec: "/src/proj", want: workspace.Mount{HostPath: "/src/proj"}},
		{name: "workspace path", spec: "/src/proj:code/proj", want: workspace.Mount{HostPath: "/src/proj", Path: "code/proj"}},
		{name: "read-only", spec: "/src/docs:ro", want: workspace.Mount{HostPath: "/src/docs", Mode: workspace.MountReadOnly}},
		{name: "path and mode", spec: "/src/docs:d:ro", want: workspace.Mount{HostPath: "/src/docs", Path: "d", Mode: workspace.MountReadOnly}},
		{name: "a folder called ro", spec: "/src/x:ro:overlay", want: workspace.Mount{HostPath: "/src/x", Path: "ro", Mode: workspace.MountOverlay}},
		{name: "copy with filters", spec: "/src/p:p:copy,include=**/*.go,include=go.mod,exclude=vendor/**,max_bytes=10m,follow_symlinks",
			want: workspace.Mount{HostPath: "/src/p", Path: "p", Mode: workspace.MountCopy, Include: []string{"**/*.go", "go.mod"},
				Exclude: []string{"vendor/**"}, MaxBytes: 10 << 20, FollowSymlinks: true}},
		{name: "home", spec: "~/proj", want: workspace.Mount{HostPath: filepath.Join(home, "proj")}},
		{name: "empty host", spec: ":p", wantErr: "the host path is empty"},
		{name: "too many colons", spec: "/a:b:ro:x", wantErr: "more than two ':'"},
		{name: "two modes", spec: "/a:b:ro,copy", wantErr: "two modes"},
		{name: "unknown option", spec: "/a:b:rw", wantErr: `unknown option "rw"`},
		{name: "bad size", spec: "/a:b:copy,max_bytes=lots", wantErr: "max_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMount(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "HOST_PATH[:WORKSPACE_PATH]") {
					t.Fatalf("err %v, want one with %q and the syntax", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestMountFlagsAndEnvironment(t *testing.T) {
	cfg, _, err := parseServeFlags([]string{"--mount", "/b:bee:ro", "--allowed-root", "/r2", "--export-on-exit", "out", "--mount-roots"},
		env(map[string]string{"WINK_MOUNTS": "/a;/c:see:copy,max_bytes=1k", "WINK_ALLOWED_ROOTS": "/r1"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Workspace
	var hosts []string
	for _, m := range w.Mounts {
		hosts = append(hosts, m.HostPath+"="+m.Path+"="+string(m.Mode))
	}
	if strings.Join(hosts, " ") != "/a== /c=see=copy /b=bee=ro" || strings.Join(w.AllowedRoots, " ") != "/r1 /r2" || !w.MountRoots {
		t.Errorf("mounts %v, roots %v, mount roots %v", hosts, w.AllowedRoots, w.MountRoots)
	}
	if cwd, _ := os.Getwd(); w.ExportDir != filepath.Join(cwd, "out") {
		t.Errorf("export dir %q, want it made absolute", w.ExportDir)
	}
	if _, _, err := parseServeFlags([]string{"--mount-roots"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "--allowed-root") {
		t.Errorf("--mount-roots without an allowed root: %v", err)
	}
}

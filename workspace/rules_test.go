package workspace

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	seg80 := strings.Repeat("a", 80)
	seg81 := strings.Repeat("a", 81)
	sixteen := strings.TrimSuffix(strings.Repeat("d/", 16), "/")
	longest := strings.TrimSuffix(strings.Repeat(seg80+"/", 16), "/")
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "empty is the root", in: "", want: ""},
		{name: "dot is the root", in: ".", want: ""},
		{name: "plain", in: "a/b.txt", want: "a/b.txt"},
		{name: "normalised", in: "a//b/./c/", want: "a/b/c"},
		{name: "dot slash", in: "./a", want: "a"},
		{name: "dotdot inside", in: "a/../b", want: "b"},
		{name: "dotdot to root", in: "a/..", want: ""},
		{name: "literal odd names", in: "-rf/%2e%2e/\\..\\x", want: "-rf/%2e%2e/\\..\\x"},
		{name: "16 segments", in: sixteen, want: sixteen},
		{name: "17 segments", in: sixteen + "/e", wantErr: "more than 16 segments"},
		{name: "80 characters", in: seg80, want: seg80},
		{name: "81 characters", in: seg81, wantErr: "81 characters long; the limit is 80"},
		{name: "16 by 80", in: longest, want: longest},
		{name: "too long before parsing", in: longest + "/", wantErr: "the limit is 1295"},
		{name: "huge", in: strings.Repeat("a", 1<<20), wantErr: "the limit is 1295"},
		{name: "parent", in: "..", wantErr: "leaves the workspace"},
		{name: "parent prefix", in: "../x", wantErr: "leaves the workspace"},
		{name: "climbs after descending", in: "a/../../x", wantErr: "leaves the workspace"},
		{name: "absolute", in: "/etc/passwd", wantErr: "is absolute"},
		{name: "absolute workspace", in: "/workspace/a.txt", wantErr: `use "a.txt"`},
		{name: "double slash", in: "//x", wantErr: "is absolute"},
		{name: "tilde", in: "~/x", wantErr: "~"},
		{name: "NUL", in: "a\x00b", wantErr: "control character 0x00"},
		{name: "newline", in: "a\nb", wantErr: "control character 0x0a"},
		{name: "DEL", in: "a\x7f", wantErr: "control character 0x7f"},
		{name: "accent", in: "café.txt", wantErr: "U+00E9"},
		{name: "RTL override", in: "a\u202eb", wantErr: "U+202E"},
		{name: "invalid UTF-8", in: "a\xffb", wantErr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CleanPath(tt.in)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("CleanPath = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("CleanPath = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults are invalid: %v", err)
	}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{name: "user name", mutate: func(c *Config) { c.User = "nobody" }, wantErr: "numeric"},
		{name: "tiny memory", mutate: func(c *Config) { c.MemoryBytes = 1 << 20 }, wantErr: "memory"},
		{name: "zero cpus", mutate: func(c *Config) { c.CPUs = 0 }, wantErr: "cpus"},
		{name: "prefix with slash", mutate: func(c *Config) { c.NamePrefix = "a/b" }, wantErr: "name prefix"},
		{name: "relative cache", mutate: func(c *Config) { c.CacheDir = "cache" }, wantErr: "absolute"},
		{name: "nproc below pids", mutate: func(c *Config) { c.NprocLimit = 10 }, wantErr: "nproc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestPodmanSpecHardening(t *testing.T) {
	s := podmanSpec(containerSpec{
		Name: "wink-x", Image: "img", User: "65534:65534", WorkspaceDir: "/cache/ws", AgentBinary: "/bin/wink-mcp",
		Limits: Limits{MemoryBytes: 1 << 30, CPUs: 1.5, PidsLimit: 256, TmpBytes: 256 << 20, NofileLimit: 4096, NprocLimit: 4096},
	})
	if s.NetNS.NSMode != "none" || !slices.Equal(s.CapDrop, []string{"ALL"}) || s.NoNewPrivileges == nil || !*s.NoNewPrivileges {
		t.Errorf("network %q, cap drop %v, no-new-privileges %v", s.NetNS.NSMode, s.CapDrop, s.NoNewPrivileges)
	}
	if s.User != "65534:65534" || s.WorkDir != Root || !slices.Equal(s.Entrypoint, []string{AgentPath}) {
		t.Errorf("user %q workdir %q entrypoint %v", s.User, s.WorkDir, s.Entrypoint)
	}
	r := s.ResourceLimits
	if *r.Memory.Limit != 1<<30 || *r.Memory.Swap != 1<<30 || *r.CPU.Quota != 15_000 || *r.CPU.Period != 10_000 || *r.CPU.Shares != 128 || r.Pids.Limit != 256 {
		t.Errorf("limits: memory %d swap %d quota %d period %d shares %d pids %d", *r.Memory.Limit, *r.Memory.Swap, *r.CPU.Quota, *r.CPU.Period, *r.CPU.Shares, r.Pids.Limit)
	}
	mounts := map[string][]string{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = append([]string{m.Type, m.Source}, m.Options...)
	}
	if got := mounts[Root]; !slices.Contains(got, "/cache/ws") || !slices.Contains(got, "rw") {
		t.Errorf("workspace mount %v", got)
	}
	if got := mounts[AgentPath]; !slices.Contains(got, "/bin/wink-mcp") || !slices.Contains(got, "ro") {
		t.Errorf("agent mount %v", got)
	}
	if got := mounts["/tmp"]; got == nil || got[0] != "tmpfs" || !slices.Contains(got, "size=268435456") || !slices.Contains(got, "U") {
		t.Errorf("tmp mount %v", got)
	}
}

func TestCandidateURIs(t *testing.T) {
	if got := candidateURIs("tcp://h:1", "/run/user/1"); !slices.Equal(got, []string{"tcp://h:1"}) {
		t.Errorf("configured: %v", got)
	}
	want := []string{"unix:///run/podman/podman.sock", "unix:///run/user/1/podman/podman.sock"}
	if got := candidateURIs("", "/run/user/1"); !slices.Equal(got, want) {
		t.Errorf("discovered: %v, want %v", got, want)
	}
	if got := candidateURIs("", ""); len(got) != 1 {
		t.Errorf("without XDG_RUNTIME_DIR: %v", got)
	}
}

package workspace

import (
	"strings"
	"testing"
)

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
		{name: "no inotify shares", mutate: func(c *Config) { c.InotifyShares = 0 }, wantErr: "--inotify-shares 0 must be between 1 and 1024"},
		{name: "too many inotify shares", mutate: func(c *Config) { c.InotifyShares = 1025 }, wantErr: "--inotify-shares 1025"},
		{name: "overlay cache with a comma", mutate: func(c *Config) { c.CacheDir, c.Mounts = "/tmp/a,b", []Mount{{HostPath: "/src"}} }, wantErr: "--cache-dir /tmp/a,b holds ','"},
		{name: "roots cache with a backslash", mutate: func(c *Config) { c.CacheDir, c.MountRoots = `/tmp/a\b`, true }, wantErr: `holds '\'`},
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
	// Copies and read-only mounts put no cache path in mount options.
	c := DefaultConfig()
	c.CacheDir, c.Mounts = "/tmp/a,b", []Mount{{HostPath: "/src", Mode: MountCopy}, {HostPath: "/ro", Mode: MountReadOnly}}
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "--cache-dir") {
		t.Errorf("Validate = %v, want no refusal of a cache directory without overlays", err)
	}
}

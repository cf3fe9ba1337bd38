package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/quota"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestFlagsOverrideEnvironmentOverDefaults(t *testing.T) {
	cfg, opts, err := parseServeFlags(
		[]string{"--memory", "512m", "--idle-timeout", "2m", "--log-format", "json"},
		env(map[string]string{"WINK_MEMORY": "2g", "WINK_IMAGE": "img:1", "WINK_CACHE": "/var/cache/w", "PODMAN_BASE_URL": "tcp://h:1", "WINK_KEEP_SESSION_DIRS": "true"}),
		io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Workspace
	if w.MemoryBytes != 512<<20 || w.Image != "img:1" || w.CacheDir != "/var/cache/w" || w.IdleTimeout != 2*time.Minute || !w.KeepSessionDirs {
		t.Errorf("config %+v", w)
	}
	if opts.service.url != "tcp://h:1" || opts.logs.format != "json" || w.PidsLimit != 256 {
		t.Errorf("podman url %q, log format %q, pids %d", opts.service.url, opts.logs.format, w.PidsLimit)
	}
}

func TestContainerHostWinsOverPodmanBaseURL(t *testing.T) {
	_, opts, err := parseServeFlags(nil, env(map[string]string{"CONTAINER_HOST": "unix:///a.sock", "PODMAN_BASE_URL": "unix:///b.sock"}), io.Discard)
	if err != nil || opts.service.url != "unix:///a.sock" {
		t.Errorf("podman url %q, %v", opts.service.url, err)
	}
}

// ssh:// keeps the session's files on the Podman host unless told not to,
// and a mount then is refused naming both options.
func TestFilesOnEngineHostFollowTheURL(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--podman-url", "unix:///run/podman/podman.sock"}, false},
		{[]string{"--podman-url", "ssh://root@h/run/podman/podman.sock"}, true},
		{[]string{"--podman-url", "ssh://root@h/run/podman/podman.sock", "--files-on-podman-host", "no"}, false},
		{[]string{"--podman-url", "tcp://h:1", "--files-on-podman-host", "yes"}, true},
	} {
		cfg, _, err := parseServeFlags(tt.args, env(nil), io.Discard)
		if err != nil || cfg.Workspace.FilesOnEngineHost != tt.want {
			t.Errorf("%v: files on the Podman host %v (%v), want %v", tt.args, cfg.Workspace.FilesOnEngineHost, err, tt.want)
		}
	}
	dir := t.TempDir()
	_, _, err := parseServeFlags([]string{"--podman-url", "ssh://root@h/s", "--allowed-root", dir, "--mount", dir + ":t"}, env(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--mount") || !strings.Contains(err.Error(), "--files-on-podman-host") || !strings.Contains(err.Error(), "copy") {
		t.Errorf("an overlay mount over ssh: %v", err)
	}
	if _, _, err := parseServeFlags([]string{"--podman-url", "ssh://root@h/s", "--allowed-root", dir, "--mount", dir + ":t:copy"}, env(nil), io.Discard); err != nil {
		t.Errorf("a copy mount over ssh: %v", err)
	}
	shared := []string{"--podman-url", "ssh://root@h/s", "--allowed-root", dir, "--mount", dir + ":t", "--podman-shared-path", filepath.Dir(dir)}
	if _, _, err := parseServeFlags(shared, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "cache directory") {
		t.Errorf("an overlay under a shared path, the cache elsewhere: %v", err)
	}
	if _, _, err := parseServeFlags(append(shared, "--cache-dir", filepath.Join(filepath.Dir(dir), "cache")), env(nil), io.Discard); err != nil {
		t.Errorf("an overlay and the cache under a shared path: %v", err)
	}
	if _, _, err := parseServeFlags([]string{"--podman-url", "ssh://root@h/s", "--allowed-root", dir, "--mount", dir + ":t:ro", "--podman-shared-path", dir}, env(nil), io.Discard); err != nil {
		t.Errorf("a read-only mount of a shared folder: %v", err)
	}
	if _, _, err := parseServeFlags([]string{"--files-on-podman-host", "maybe"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "auto, yes or no") {
		t.Errorf("--files-on-podman-host maybe: %v", err)
	}
}

func TestBadSettingsAreNamed(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "bad env size", env: map[string]string{"WINK_MEMORY": "lots"}, wantErr: "WINK_MEMORY"},
		{name: "bad env duration", env: map[string]string{"WINK_IDLE_TIMEOUT": "soon"}, wantErr: "WINK_IDLE_TIMEOUT"},
		{name: "bad flag", args: []string{"--cpus", "x"}, wantErr: "cpus"},
		{name: "invalid value", args: []string{"--user", "root"}, wantErr: "numeric uid:gid"},
		{name: "stray argument", args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "nope"},
		{name: "command timeout too long", args: []string{"--max-command-timeout", "25h"}, wantErr: "--max-command-timeout 25h0m0s: must be between 1s and 24h"},
		{name: "command timeout too short", args: []string{"--max-command-timeout", "500ms"}, wantErr: "must be between 1s and 24h"},
		{name: "negative job age", args: []string{"--max-job-age", "-1m"}, wantErr: "maximum job age must not be negative"},
		{name: "no egress connections", args: []string{"--egress-max-conns", "0"}, wantErr: "--egress-max-conns 0 must be between 1 and 4096"},
		{name: "too many egress connections", env: map[string]string{"WINK_EGRESS_MAX_CONNS": "5000"}, wantErr: "--egress-max-conns 5000 must be between 1 and 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseServeFlags(tt.args, env(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	var b strings.Builder
	log, err := newLogger(&b, logOptions{level: "warn", format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(b.String(), "hidden") || !strings.Contains(b.String(), `"msg":"shown"`) {
		t.Errorf("log output %q", b.String())
	}
	if _, err := newLogger(&b, logOptions{level: "loud", format: "text"}); err == nil {
		t.Error("bad level accepted")
	}
}

func TestHTTPFlags(t *testing.T) {
	dir := t.TempDir()
	tokenFile := dir + "/tokens"
	if err := os.WriteFile(tokenFile, []byte("# one a line\n0123456789abcdef0123456789abcdef\n\nfedcba9876543210fedcba9876543210\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, opts, err := parseServeFlags([]string{"--transport", "http", "--addr", "0.0.0.0:9000", "--auth-token-file", tokenFile,
		"--allowed-host", "a.example,b.example", "--allowed-host", "c.example"},
		env(map[string]string{"WINK_ALLOWED_ORIGINS": "https://x.example", "WINK_MAX_SESSIONS": "8", "WINK_QUOTA_WORKSPACES": "1", "WINK_QUOTA_MEMORY": "2g", "WINK_QUOTA_CPUS": "1.5", "WINK_QUOTA_EGRESS_BYTES": "1m", "WINK_QUOTA_CHECKPOINT_BYTES": "1k"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Quotas.Reserve("p", quota.Amounts{quota.Workspaces: 2}); err == nil {
		t.Errorf("WINK_QUOTA_WORKSPACES=1 let a client hold 2 workspaces")
	}
	if _, err := cfg.Quotas.Reserve("p", quota.Amounts{quota.MemoryBytes: 2 << 30, quota.MilliCPUs: 1500}); err != nil {
		t.Errorf("the memory and CPU quotas: %v", err)
	}
	if _, err := cfg.Quotas.Reserve("p", quota.Amounts{quota.MilliCPUs: 1}); err == nil {
		t.Errorf("WINK_QUOTA_CPUS=1.5 let a client hold 1.501 CPUs")
	}
	if b := cfg.Quotas.Egress("p"); b == nil {
		t.Errorf("WINK_QUOTA_EGRESS_BYTES set no egress quota")
	} else if b.Add(1 << 20); !b.Over() {
		t.Errorf("WINK_QUOTA_EGRESS_BYTES=1m: 1 MiB carried is not over it")
	}
	if account := cfg.Quotas.Checkpoints("p", "store"); account.Take(1024) != nil || account.Take(1) == nil {
		t.Errorf("WINK_QUOTA_CHECKPOINT_BYTES=1k: not a quota of 1024 bytes of checkpoints")
	}
	h := cfg.HTTP
	if opts.transport != "http" || h.Addr != "0.0.0.0:9000" || len(h.AuthTokens) != 2 || len(h.AllowedHosts) != 3 || h.AllowedOrigins[0] != "https://x.example" || h.MaxSessions != 8 {
		t.Errorf("config %+v, transport %q", h, opts.transport)
	}
	refusals := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "public without token", args: []string{"--transport", "sse", "--addr", "0.0.0.0:9000"}, wantErr: "without a bearer token"},
		{name: "missing token file", args: []string{"--transport", "http", "--auth-token-file", dir + "/nope"}, wantErr: "reading the auth token file"},
		{name: "unknown transport", args: []string{"--transport", "websocket"}, wantErr: `transport "websocket"`},
		{name: "short token", args: []string{"--transport", "http"}, env: map[string]string{"WINK_AUTH_TOKEN": "short"}, wantErr: "shorter than 16"},
		{name: "oauth on stdio", args: []string{"--oauth-issuer", "https://idp.example.com"}, wantErr: "--oauth-issuer protects the HTTP transports"},
		{name: "oauth public without audience", args: []string{"--transport", "http", "--addr", "0.0.0.0:9000", "--oauth-issuer", "https://idp.example.com"}, wantErr: "--oauth-audience is needed"},
		{name: "negative quota", args: []string{"--transport", "http", "--quota-workspaces", "-1"}, wantErr: "--quota-workspaces -1: want 0 (no quota)"},
		{name: "memory quota below a container", args: []string{"--transport", "http", "--quota-memory", "512m"}, wantErr: "--quota-memory 536870912: want 0 (no quota) or at least one container's --memory"},
		{name: "negative checkpoint quota", args: []string{"--transport", "http", "--quota-checkpoint-bytes", "-1"}, wantErr: `-quota-checkpoint-bytes: "-1" is not a size`},
		{name: "cpu quota below a container", args: []string{"--transport", "http", "--quota-cpus", "0.5"}, wantErr: "--quota-cpus 0.5: want 0 (no quota) or at least one container's --cpus (1)"},
		{name: "oauth and tokens", args: []string{"--transport", "http", "--oauth-issuer", "https://idp.example.com"}, env: map[string]string{"WINK_AUTH_TOKEN": "0123456789abcdef0123456789abcdef"}, wantErr: "choose one"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := parseServeFlags(tt.args, env(tt.env), io.Discard); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestBadFlagsExitTwoBeforeAnythingRuns(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "--log-level", "loud"},
		{"doctor", "--bogus"},
		{"serve", "--transport", "carrier-pigeon"},
		{"serve", "--transport", "http", "--warm", "-3"},
		{"serve", "--warm", "2"},
	} {
		var stderr strings.Builder
		if code := run(args, strings.NewReader(""), io.Discard, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, stderr.String())
		}
	}
	if code := run([]string{"doctor", "-h"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
		t.Errorf("doctor -h: exit %d", code)
	}
}

func TestWarm(t *testing.T) {
	http := []string{"--transport", "http"}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{name: "stdio default", want: 0},
		{name: "http default", args: http, want: defaultHTTPWarm},
		{name: "http default under a small session cap", args: append(http, "--max-sessions", "1"), want: 1},
		{name: "http default with client roots", args: append(http, "--mount-roots", "--allowed-root", "/tmp"), want: 0},
		{name: "flag", args: append(http, "--warm", "50"), want: 50},
		{name: "environment", args: http, env: map[string]string{"WINK_WARM": "7"}, want: 7},
		{name: "off", args: append(http, "--warm", "0"), want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := parseServeFlags(tt.args, env(tt.env), io.Discard)
			if err != nil || cfg.Workspace.Warm != tt.want {
				t.Errorf("warm %d, %v; want %d", cfg.Workspace.Warm, err, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "negative", args: append(http, "--warm", "-1"), want: "warm -1 must be between 0 and 256"},
		{name: "too many", args: append(http, "--warm", "257", "--max-sessions", "300"), want: "between 0 and 256"},
		{name: "not a number", args: append(http, "--warm", "lots"), want: `--warm "lots": want a number`},
		{name: "above the session cap", args: append(http, "--warm", "10", "--max-sessions", "4"), want: "more than --max-sessions 4"},
		{name: "stdio", args: []string{"--warm", "1"}, want: "stdio server has one session"},
		{name: "client roots", args: append(http, "--warm", "2", "--mount-roots", "--allowed-root", "/tmp"), want: "cannot serve --mount-roots"},
		{name: "kept directories", args: append(http, "--warm", "2", "--keep-session-dirs"), want: "cannot serve --keep-session-dirs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseServeFlags(tt.args, env(nil), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

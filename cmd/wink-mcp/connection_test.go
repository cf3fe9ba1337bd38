package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// podmanConfig writes a containers.conf with Podman 4's connections and a
// podman-connections.json with Podman 5's, both in a folder of the test,
// and points Podman's configuration there (never the machine's own).
func podmanConfig(t *testing.T, conf, connections string) {
	t.Helper()
	dir := t.TempDir()
	confFile := filepath.Join(dir, "containers.conf")
	must(t, os.WriteFile(confFile, []byte(conf), 0o644))
	t.Setenv("CONTAINERS_CONF", confFile)
	t.Setenv("CONTAINERS_CONF_OVERRIDE", "")
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("PODMAN_CONNECTIONS_CONF", filepath.Join(dir, "podman-connections.json"))
	if connections != "" {
		must(t, os.WriteFile(filepath.Join(dir, "podman-connections.json"), []byte(connections), 0o644))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const (
	// podman4Conf is what `podman system connection add` writes in
	// containers.conf (Podman 4).
	podman4Conf = `[engine]
active_service = "old"
[engine.service_destinations.old]
uri = "ssh://core@old.example:22/run/podman/podman.sock"
identity = "/keys/old"
[engine.service_destinations.shared]
uri = "unix:///run/shared.sock"
`
	// podman5Connections is Podman 5's podman-connections.json, with a
	// podman machine's connection as the default.
	podman5Connections = `{"Connection":{"Default":"machine","Connections":{
"machine":{"URI":"ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock","Identity":"/keys/machine","IsMachine":true},
"tls":{"URI":"tcp://h:8443","TLSCert":"/c.pem","TLSKey":"/k.pem","TLSCA":"/ca.pem"}}}}`
)

// The service is chosen as Podman's remote client chooses it: flags, then
// a connection named in the environment, then CONTAINER_HOST, then the
// default connection; a connection carries its identity and machine mode.
func TestPodmanServiceIsChosenAsPodmanDoes(t *testing.T) {
	tests := []struct {
		name                string
		conf, connections   string
		args                []string
		vars                map[string]string
		url, identity, used string
		machine             bool
	}{
		{name: "nothing configured: the local sockets", conf: "", url: ""},
		{name: "containers.conf's default", conf: podman4Conf, url: "ssh://core@old.example:22/run/podman/podman.sock", identity: "/keys/old", used: "old"},
		{name: "podman-connections.json's default wins over containers.conf's", conf: podman4Conf, connections: podman5Connections,
			url: "ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock", identity: "/keys/machine", used: "machine", machine: true},
		{name: "CONTAINER_HOST wins over the default", conf: podman4Conf, vars: map[string]string{"CONTAINER_HOST": "unix:///h.sock", "CONTAINER_SSHKEY": "/keys/env"},
			url: "unix:///h.sock", identity: "/keys/env"},
		{name: "CONTAINER_CONNECTION wins over CONTAINER_HOST", conf: podman4Conf, vars: map[string]string{"CONTAINER_HOST": "unix:///h.sock", "CONTAINER_CONNECTION": "shared"},
			url: "unix:///run/shared.sock", used: "shared"},
		{name: "PODMAN_CONNECTION names one too", conf: podman4Conf, connections: podman5Connections, vars: map[string]string{"PODMAN_CONNECTION": "old"},
			url: "ssh://core@old.example:22/run/podman/podman.sock", identity: "/keys/old", used: "old"},
		{name: "the flag wins over the variable", conf: podman4Conf, connections: podman5Connections, args: []string{"--podman-connection", "shared"},
			vars: map[string]string{"CONTAINER_CONNECTION": "old"}, url: "unix:///run/shared.sock", used: "shared"},
		{name: "--podman-url wins over every connection, even a missing one", conf: podman4Conf, args: []string{"--podman-url", "unix:///u.sock"},
			vars: map[string]string{"CONTAINER_CONNECTION": "nope"}, url: "unix:///u.sock"},
		{name: "--podman-identity wins over the connection's", conf: podman4Conf, args: []string{"--podman-identity", "/keys/mine"},
			url: "ssh://core@old.example:22/run/podman/podman.sock", identity: "/keys/mine", used: "old"},
		{name: "TLS files", connections: podman5Connections, args: []string{"--podman-connection", "tls"}, url: "tcp://h:8443", used: "tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podmanConfig(t, tt.conf, tt.connections)
			cfg, opts, err := parseServeFlags(tt.args, env(tt.vars), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			w, s := cfg.Workspace, opts.service
			if s.url != tt.url || s.identity != tt.identity || s.connection != tt.used || s.machine != tt.machine {
				t.Errorf("url %q identity %q connection %q machine %v; want %q %q %q %v",
					s.url, s.identity, s.connection, s.machine, tt.url, tt.identity, tt.used, tt.machine)
			}
			if tt.used == "tls" && (s.tlsCert != "/c.pem" || s.tlsKey != "/k.pem" || s.tlsCA != "/ca.pem") {
				t.Errorf("TLS files %q %q %q", s.tlsCert, s.tlsKey, s.tlsCA)
			}
			if strings.HasPrefix(s.url, "ssh://") != w.FilesOnEngineHost {
				t.Errorf("files on the Podman host %v for %s", w.FilesOnEngineHost, s.url)
			}
		})
	}
}

// A connection that does not exist stops the start, naming where the name
// came from and listing the known ones.
func TestUnknownPodmanConnectionIsRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want []string
	}{
		{"by the flag", []string{"--podman-connection", "nope"}, nil, []string{`--podman-connection "nope"`, "the known ones are machine, old, shared, tls", "podman system connection add"}},
		{"by the variable", nil, map[string]string{"CONTAINER_CONNECTION": "nope"}, []string{"CONTAINER_CONNECTION", `"nope"`, "machine, old, shared, tls"}},
		{"with the URL flag too", []string{"--podman-url", "unix:///u.sock", "--podman-connection", "old"}, nil, []string{"--podman-url and --podman-connection"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podmanConfig(t, podman4Conf, podman5Connections)
			_, _, err := parseServeFlags(tt.args, env(tt.vars), io.Discard)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q lacks %q", err, want)
				}
			}
		})
	}
	t.Run("none configured", func(t *testing.T) {
		podmanConfig(t, "", "")
		_, _, err := parseServeFlags([]string{"--podman-connection", "nope"}, env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "there are none") {
			t.Errorf("err %v", err)
		}
	})
}

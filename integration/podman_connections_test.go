package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tryConnections adds a connection to this machine's service (the
// default) and one to the remote host, with `podman system connection
// add` in a containers.conf of the test (never the machine's own), and
// starts servers whose environment chooses between them, as podman does.
// It returns how many were tried and broken.
func tryConnections(t *testing.T) (tried, broken int) {
	r := needRemote(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "containers.conf")
	must(t, os.WriteFile(conf, nil, 0o644))
	config := []string{"CONTAINERS_CONF=" + conf, "XDG_CONFIG_HOME=" + dir, "PODMAN_CONNECTIONS_CONF=" + filepath.Join(dir, "podman-connections.json")}
	for _, args := range [][]string{{"--identity", r.key, "wink-remote", r.url}, {"--default", "wink-local", "unix://" + podmanSocket}} {
		add := exec.Command("podman", append([]string{"system", "connection", "add"}, args...)...)
		add.Env = append(os.Environ(), config...)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("podman system connection add %v: %v: %s", args, err, out)
		}
	}
	remoteArgs := []string{"--disk-limit", "0", "--warm", "0"}
	for _, tt := range []struct {
		name   string
		env    []string
		args   []string
		remote bool
		json   string // Podman 5's podman-connections.json, written for this server
	}{
		{name: "containers.conf's default"},
		{name: "CONTAINER_CONNECTION", env: []string{"CONTAINER_CONNECTION=wink-remote"}, args: remoteArgs, remote: true},
		{name: "--podman-connection over CONTAINER_CONNECTION", env: []string{"CONTAINER_CONNECTION=wink-local"},
			args: append([]string{"--podman-connection", "wink-remote"}, remoteArgs...), remote: true},
		{name: "CONTAINER_CONNECTION over CONTAINER_HOST", env: []string{"CONTAINER_HOST=unix://" + podmanSocket, "PODMAN_CONNECTION=wink-remote"},
			args: remoteArgs, remote: true},
		{name: "podman-connections.json's default over containers.conf's", json: `{"Connection":{"Default":"wink-remote"}}`, args: remoteArgs, remote: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tried++
			if tt.json != "" {
				file := filepath.Join(dir, "podman-connections.json")
				must(t, os.WriteFile(file, []byte(tt.json), 0o644))
				t.Cleanup(func() { os.Remove(file) })
			}
			opts := startOptions{serviceFromEnv: true, env: append(append([]string{}, config...), tt.env...), args: tt.args}
			if tt.remote {
				opts.remote = r
			}
			p := start(t, opts)
			if res := p.run("echo", "reached"); strings.TrimSpace(res.Stdout) != "reached" {
				broken++
				t.Fatalf("a command: %+v", res)
			}
			onRemote, onLocal := len(r.named(t, "container", p.prefix)) > 0, len(containersNamed(t, p.prefix)) > 0
			if onRemote != tt.remote || onLocal == tt.remote {
				broken++
				t.Errorf("the container is on the remote host %v, on this one %v; want remote %v", onRemote, onLocal, tt.remote)
			}
		})
	}
	t.Run("a name that does not exist", func(t *testing.T) {
		tried++
		cmd := exec.Command(winkBin, "--cache-dir", t.TempDir())
		cmd.Env = append(append(os.Environ(), config...), "CONTAINER_CONNECTION=wink-nope")
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), `"wink-nope": no such Podman connection`) ||
			!strings.Contains(string(out), "the known ones are wink-local, wink-remote") {
			broken++
			t.Errorf("exit %d (%v): %s; want 2 and the known connections", code, err, out)
		}
	})
	return tried, broken
}

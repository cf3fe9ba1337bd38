package integration

import (
	"strings"
	"testing"
)

// postgresProfile installs PostgreSQL from Debian's packages (server and
// psql); its service runs initdb and postgres as the workspace's non-root
// user on the service's own /workspace.
const postgresProfile = `profiles:
  svc-postgres:
    description: PostgreSQL from Debian, for services
    image: PY_IMAGE
    setup:
      - apt-get update && apt-get install -y --no-install-recommends postgresql && rm -rf /var/lib/apt/lists/*
    egress:
      setup: ["${APT_MIRROR_HOST}"]
`

// TestPostgresServiceBesideTheWorkspace: a PostgreSQL service, ready when
// pg_isready says so (the command check), and a small SQL test suite the
// workspace runs with psql against it.
func TestPostgresServiceBesideTheWorkspace(t *testing.T) {
	file := writeServicesProfile(t, "postgres.yaml", postgresProfile)
	p := start(t, startOptions{image: pythonImage, env: []string{"APT_MIRROR_HOST=" + aptMirrorHost(t)},
		args: []string{"--profiles", file, "--profile", "svc-postgres", "--warm", "0"}})
	bin := "/usr/lib/postgresql/15/bin"
	// A user the image lacks, and root, are refused.
	if _, text, failed := p.startService(map[string]any{"name": "db", "profile": "svc-postgres", "ports": []int{5432}, "user": "nosuch",
		"command": []string{"true"}, "ready_port": 5432}); !failed || !strings.Contains(text, `user: profile svc-postgres's image: no user "nosuch" in its /etc/passwd`) {
		t.Errorf("a user the image lacks: %q", text)
	}
	if _, text, failed := p.startService(map[string]any{"name": "db", "profile": "svc-postgres", "ports": []int{5432}, "user": "root",
		"command": []string{"true"}, "ready_port": 5432}); !failed || !strings.Contains(text, `user: "root" is not a user a service may run as`) {
		t.Errorf("root: %q", text)
	}
	started, text, failed := p.startService(map[string]any{"name": "db", "profile": "svc-postgres", "ports": []int{5432}, "user": "postgres",
		"command": []string{"sh", "-c", bin + "/initdb -D /workspace/pg -U postgres --auth=trust >/dev/null && exec " + bin +
			"/postgres -D /workspace/pg -k /tmp -h 127.0.0.1 -p 5432"},
		"ready_command": []string{"pg_isready", "-h", "127.0.0.1", "-p", "5432"}, "ready_timeout_seconds": 120})
	if failed {
		t.Fatalf("starting PostgreSQL: %s", text)
	}
	t.Logf("PostgreSQL ready in %d ms", started.Service.ReadyMS)
	suite := `\set ON_ERROR_STOP on
CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL, price numeric NOT NULL);
INSERT INTO items (name, price) VALUES ('a', 1.50), ('b', 2.25), ('c', 3.00);
DO $$ BEGIN
  ASSERT (SELECT count(*) FROM items) = 3, 'three rows';
  ASSERT (SELECT sum(price) FROM items) = 6.75, 'their sum';
  ASSERT (SELECT current_user) = 'postgres', 'the role initdb made';
END $$;
SELECT 'suite passed';
`
	out := p.shell(map[string]any{"command": []string{"psql", "-h", "127.0.0.1", "-U", "postgres", "-tA", "-f", "-"}, "stdin": suite})
	if !strings.Contains(out.Stdout, "suite passed") || out.ExitCode != 0 {
		t.Errorf("the SQL suite through psql: exit %d %q %q", out.ExitCode, out.Stdout, out.Stderr)
	}
	// It runs as the image's postgres user, with no capabilities, as the
	// server's check after creation saw (the container's configured user).
	if got, err := podman(t, "exec", started.Service.Container, "sh", "-c", "stat -c %U /workspace/pg; id -un; grep CapEff /proc/1/status"); err != nil ||
		strings.Join(strings.Fields(got), " ") != "postgres postgres CapEff: 0000000000000000" {
		t.Errorf("PostgreSQL's data and process: %q %v; want postgres's, with no capabilities", got, err)
	}
	if got, err := podman(t, "inspect", "--format", "{{.Config.User}} {{.HostConfig.NetworkMode}} {{.HostConfig.CapAdd}}", started.Service.Container); err != nil ||
		strings.HasPrefix(got, "0") || !strings.HasSuffix(strings.TrimSpace(got), " none []") {
		t.Errorf("the service container's user, network and capabilities: %q %v", got, err)
	}

	// A checkpoint holds the workspace's files, not the service's data: a
	// restore brings back the files and leaves the service and its rows.
	p.run("sh", "-c", "echo before > notes.txt")
	if res := p.call("workspace_checkpoint", map[string]any{"message": "before the rows"}); res.IsError {
		t.Fatalf("checkpoint: %s", textOf(res))
	}
	p.run("sh", "-c", "echo after > notes.txt && psql -h 127.0.0.1 -U postgres -c \"INSERT INTO items (name, price) VALUES ('d', 1)\"")
	if res := p.call("workspace_restore", map[string]any{"checkpoint": "c1"}); res.IsError {
		t.Fatalf("restore: %s", textOf(res))
	}
	out = p.run("sh", "-c", "cat notes.txt; psql -h 127.0.0.1 -U postgres -tA -c 'SELECT count(*) FROM items'")
	if got := strings.Fields(out.Stdout); strings.Join(got, " ") != "before 4" {
		t.Errorf("after a restore: %q %q; want the file restored and the service's four rows untouched", out.Stdout, out.Stderr)
	}
}

package services

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func profileOf(image string) (string, error) {
	if image == "redis" || image == "svc-redis" {
		return "svc-redis", nil
	}
	return "", fmt.Errorf("%q is neither a profile nor a profile's image", image)
}

// The subset is read: image to profile, command (list or shell string),
// environment (map or list), ports (same number), depends_on (list or
// conditions), healthcheck (CMD, CMD-SHELL; its wait bound), and the
// services come back dependencies first.
func TestComposeReadsItsSubset(t *testing.T) {
	decls, err := Compose("compose.yaml", []byte(`name: demo
services:
  web:
    image: svc-redis
    command: python3 -m http.server 8000
    environment: [MODE=test, EMPTY=]
    ports: ["8000:8000"]
    depends_on:
      db: {condition: service_healthy}
  db:
    image: redis
    command: [redis-server, --port, "6379"]
    environment: {A: b}
    ports: ["127.0.0.1:6379:6379", 6380]
    healthcheck:
      test: [CMD, redis-cli, ping]
      interval: 2s
      retries: 5
`), profileOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(decls) != 2 || decls[0].Name != "db" || decls[1].Name != "web" {
		t.Fatalf("order: %+v", decls)
	}
	db, web := decls[0], decls[1]
	if db.Profile != "svc-redis" || strings.Join(db.Command, " ") != "redis-server --port 6379" || db.Env["A"] != "b" ||
		fmt.Sprint(db.Ports) != "[6379 6380]" || strings.Join(db.Ready.Command, " ") != "redis-cli ping" || db.Ready.Timeout != 10*time.Second {
		t.Errorf("db: %+v", db)
	}
	if strings.Join(web.Command, "|") != "sh|-c|python3 -m http.server 8000" || web.Env["MODE"] != "test" || web.Env["EMPTY"] != "" ||
		web.Ready.Port != 8000 || web.Ready.Timeout != DefaultReadyTimeout || web.DependsOn[0] != "db" {
		t.Errorf("web: %+v", web)
	}
}

// Every key outside the subset is refused, named with its line, and so
// are what the subset cannot mean: another port number, an image no
// profile has, no command, a cycle.
func TestComposeRefusesWhatItDoesNotRead(t *testing.T) {
	svc := "services:\n  db:\n    image: redis\n    command: [x]\n    ports: [\"6379\"]\n"
	for _, c := range []struct{ text, want string }{
		{"volumes: {data: {}}\n" + svc, "compose.yaml:1: volumes: is not in the subset"},
		{svc + "    volumes: [/:/host]\n", "compose.yaml:6: services.db.volumes: is not in the subset wink-mcp reads (image, command, environment, ports, depends_on, healthcheck)"},
		{svc + "    privileged: true\n", "services.db.privileged: is not in the subset"},
		{svc + "    network_mode: host\n", "services.db.network_mode: is not in the subset"},
		{strings.Replace(svc, `"6379"`, `"80:6379"`, 1), `services.db.ports[0]: "80:6379" maps to another number`},
		{strings.Replace(svc, `"6379"`, `"0.0.0.0:6379:6379"`, 1), `services.db.ports[0]: "0.0.0.0:6379:6379": a port is PORT or PORT:PORT`},
		{strings.Replace(svc, `"6379"`, `"80"`, 1), "ports[0]: 80 is outside 1024-65535"},
		{strings.Replace(svc, "image: redis", "image: postgres:16", 1), `compose.yaml:3: services.db.image: "postgres:16" is neither a profile nor a profile's image`},
		{strings.Replace(svc, "    command: [x]\n", "", 1), "services.db.command: is required"},
		{svc + "    depends_on: [db]\n", "services.db.depends_on: a cycle (db -> db)"},
		{svc + "    depends_on: {other: {condition: service_completed_successfully}}\n", "services.db.depends_on.other.condition: only condition"},
		{svc + "    healthcheck: {test: [NONE]}\n", "services.db.healthcheck.test: must be [CMD"},
		{svc + "    healthcheck: {test: [CMD, x], disable: true}\n", "services.db.healthcheck.disable: is not in the subset"},
		{"services:\n  db: &a\n    image: redis\n  web: *a\n", "must be a plain string"},
		{"x: [", "compose.yaml: "},
		{"services: {}\n", "declares no services"},
	} {
		_, err := Compose("compose.yaml", []byte(c.text), profileOf)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.text, err, c.want)
		}
	}
	if _, err := Compose("compose.yaml", make([]byte, MaxComposeBytes+1), profileOf); err == nil || !strings.Contains(err.Error(), "at most 65536") {
		t.Errorf("a big file: %v", err)
	}
}

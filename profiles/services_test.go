package profiles

import (
	"strings"
	"testing"
	"time"
)

// A declared service is read with its profile's name as its default
// profile and the default readiness timeout; what it extends declares
// them for a profile that declares none.
func TestServicesAreRead(t *testing.T) {
	f, err := Parse("p.yaml", []byte(`profiles:
  redis:
    services:
      cache:
        command: [redis-server, --port, "6379"]
        env: {A: b}
        ports: [6379]
        ready: {port: 6379}
  app:
    extends: redis
  pg:
    services:
      db:
        profile: redis
        command: [postgres]
        ports: [5432, 5433]
        ready: {command: [pg_isready], timeout: 2m}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	cache := f.Profiles["redis"].Services
	if len(cache) != 1 || cache[0].Name != "cache" || cache[0].Profile != "redis" || cache[0].Ports[0] != 6379 ||
		cache[0].Ready.Port != 6379 || cache[0].Ready.Timeout != time.Minute || cache[0].Env["A"] != "b" || cache[0].Line != 4 {
		t.Errorf("redis's services: %+v", cache)
	}
	if app := f.Profiles["app"].Services; len(app) != 1 || app[0].Profile != "redis" {
		t.Errorf("app's services (extends redis): %+v", app)
	}
	if db := f.Profiles["pg"].Services; len(db) != 1 || db[0].Profile != "redis" || db[0].Ready.Timeout != 2*time.Minute || len(db[0].Ports) != 2 {
		t.Errorf("pg's services: %+v", db)
	}
}

// Every bad declaration is refused with the file, line, profile and field.
func TestBadServicesNameTheField(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"services: [a]", `p.yaml:3: profile "a": services: must be a mapping`},
		{"services:\n      x: 1", `p.yaml:4: profile "a": services.x: must be a mapping`},
		{"services:\n      x: {command: [a], ports: [80], ready: {port: 80}}", `p.yaml:4: profile "a": services.x: ports[0]: 80 is outside 1024-65535`},
		{"services:\n      x: {command: [a], ports: [2000], ready: {port: 2001}}", `services.x: ready.port: 2001 is not one of the service's ports`},
		{"services:\n      x: {command: [a], ports: [2000]}", `services.x: ready: needs port`},
		{"services:\n      x: {command: [a], ports: [http], ready: {port: 2000}}", `services.x.ports[0]: "http" is not a port number`},
		{"services:\n      x: {command: [a], ports: [2000], ready: {port: 2000, timeout: soon}}", `services.x.ready.timeout: "soon" is not a duration`},
		{"services:\n      x: {command: [a], ports: [2000], ready: {port: 2000}, host: h}", `services.x.host: unknown field`},
		{"services:\n      X: {command: [a], ports: [2000], ready: {port: 2000}}", `services.X: name: "X" is not a service name`},
		{"services:\n      x: {command: [a], ports: [2000], ready: {port: 2000}, autostart: yes}", `services.x.autostart: "yes" is not true or false`},
		{"services:\n      x: {command: [a], ports: [2000], ready: {port: 2000}, depends_on: [y]}", `p.yaml:4: profile "a": services.x.depends_on[0]: "y" is no service this profile declares`},
		{"services:\n      x: {command: [a], ports: [2000], ready: {port: 2000}, depends_on: [y]}\n      y: {command: [a], ports: [2001], ready: {port: 2001}, depends_on: [x]}",
			`services.x.depends_on: a cycle (x -> y -> x)`},
		{"services:\n      x: {profile: nope, command: [a], ports: [2000], ready: {port: 2000}}", `p.yaml:4: profile "a": services.x.profile: names no profile of this file`},
	} {
		_, err := Parse("p.yaml", []byte("profiles:\n  a:\n    "+c.text+"\n"), noEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.text, err, c.want)
		}
	}
}

// autostart and depends_on are read as declared.
func TestAutostartServicesAreRead(t *testing.T) {
	f, err := Parse("p.yaml", []byte(`profiles:
  a:
    services:
      web:
        command: [a]
        ports: [2001]
        ready: {port: 2001}
        autostart: true
        depends_on: [db]
      db:
        command: [a]
        ports: [2000]
        ready: {port: 2000}
`), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	svcs := f.Profiles["a"].Services
	if len(svcs) != 2 || !svcs[0].Autostart || len(svcs[0].DependsOn) != 1 || svcs[0].DependsOn[0] != "db" || svcs[1].Autostart {
		t.Errorf("services: %+v", svcs)
	}
}

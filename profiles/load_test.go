package profiles

import (
	"strings"
	"testing"
	"time"
)

func noEnv(string) (string, bool) { return "", false }

const good = `# a comment
default: python
profiles:
  base:
    description: Debian with git
    image: localhost/wink-workspace:bookworm
    env:
      LANG: C.UTF-8
    setup:
      - apt-get update
    egress:
      setup: ["${MIRROR}"]
  python:
    extends: base
    description: Python with pytest
    setup:
      - apt-get install -y python3-pytest
    env:
      PYTHONDONTWRITEBYTECODE: "1"
    workdir: /workspace/app
    limits:
      memory: 2g
      cpus: 1.5
      pids: 512
      disk: 0
      command_timeout: 5m
      setup_timeout: 20m
    egress:
      session: [packages.example.org]
`

func TestParseResolvesExtends(t *testing.T) {
	f, err := Parse("p.yaml", []byte(good), func(k string) (string, bool) { return "mirror.example", k == "MIRROR" })
	if err != nil {
		t.Fatal(err)
	}
	if f.Default != "python" || strings.Join(f.Names(), ",") != "base,python" {
		t.Fatalf("default %q, names %v", f.Default, f.Names())
	}
	p := f.Profiles["python"]
	if p.Image != "localhost/wink-workspace:bookworm" || p.Description != "Python with pytest" || p.Workdir != "app" || p.Line != 13 {
		t.Errorf("profile %+v", p)
	}
	if strings.Join(p.Setup, ";") != "apt-get update;apt-get install -y python3-pytest" {
		t.Errorf("setup %q: want the parent's commands first", p.Setup)
	}
	if p.Env["LANG"] != "C.UTF-8" || p.Env["PYTHONDONTWRITEBYTECODE"] != "1" {
		t.Errorf("env %v: want both", p.Env)
	}
	if strings.Join(p.Egress.Setup, ",") != "mirror.example" || strings.Join(p.Egress.Session, ",") != "packages.example.org" {
		t.Errorf("egress %+v", p.Egress)
	}
	l := p.Limits
	if l.MemoryBytes != 2<<30 || l.CPUs != 1.5 || l.Pids != 512 || l.DiskBytes == nil || *l.DiskBytes != 0 ||
		l.CommandTimeout != 5*time.Minute || l.SetupTimeout != 20*time.Minute {
		t.Errorf("limits %+v", l)
	}
	if len(f.Profiles["base"].Egress.Session) != 0 {
		t.Errorf("the parent got the child's egress")
	}
}

// TestBadFilesNameTheLine checks that every kind of mistake is refused
// with the file, the line, the profile and the field.
func TestBadFilesNameTheLine(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"syntax", "profiles:\n  a:\n    image: [\n", []string{"p.yaml", "line"}},
		{"empty", "", []string{"empty"}},
		{"not a mapping", "- a\n", []string{"p.yaml:1", "mapping"}},
		{"unknown top key", "profile:\n  a: {}\n", []string{"p.yaml:1", "profile", "unknown key"}},
		{"no profiles", "profiles: {}\n", []string{"no profiles"}},
		{"bad name", "profiles:\n  Py: {}\n", []string{"p.yaml:2", `"Py"`, "lowercase"}},
		{"unknown field", "profiles:\n  a:\n    imgae: x\n", []string{"p.yaml:3", `profile "a"`, "imgae", "unknown field"}},
		{"twice", "profiles:\n  a:\n    image: x\n    image: y\n", []string{"p.yaml:4", "given twice"}},
		{"bad image", "profiles:\n  a:\n    image: 'bad image'\n", []string{"p.yaml:3", "image", "not an image reference"}},
		{"unset variable", "profiles:\n  a:\n    image: ${NOPE}/x\n", []string{"p.yaml:3", "${NOPE} is not set"}},
		{"setup not a list", "profiles:\n  a:\n    setup: make\n", []string{"p.yaml:3", "setup", "must be a list"}},
		{"empty command", "profiles:\n  a:\n    setup:\n      - ok\n      - ''\n", []string{"p.yaml:5", "setup", "1 to"}},
		{"null command", "profiles:\n  a:\n    setup:\n      - \n", []string{"p.yaml:4", "setup[0]"}},
		{"env name", "profiles:\n  a:\n    env:\n      1X: y\n", []string{"p.yaml:4", "env.1X"}},
		{"proxy env", "profiles:\n  a:\n    env:\n      https_proxy: y\n", []string{"p.yaml:4", "egress proxy"}},
		{"cdi device", "profiles:\n  a:\n    cdi_devices: [nvidia.com/gpu=all, /dev/nvidia0]\n", []string{"p.yaml:3", "cdi_devices", `"/dev/nvidia0" is not a CDI device name`}},
		{"workdir escape", "profiles:\n  a:\n    workdir: ../etc\n", []string{"p.yaml:3", "workdir", "under /workspace"}},
		{"workdir outside", "profiles:\n  a:\n    workdir: /etc\n", []string{"p.yaml:3", "workdir"}},
		{"memory", "profiles:\n  a:\n    limits:\n      memory: lots\n", []string{"p.yaml:4", "limits.memory", "not a size"}},
		{"memory small", "profiles:\n  a:\n    limits:\n      memory: 1m\n", []string{"p.yaml:4", "minimum"}},
		{"cpus", "profiles:\n  a:\n    limits:\n      cpus: 0\n", []string{"p.yaml:4", "limits.cpus"}},
		{"pids", "profiles:\n  a:\n    limits:\n      pids: 2\n", []string{"p.yaml:4", "limits.pids"}},
		{"timeout", "profiles:\n  a:\n    limits:\n      setup_timeout: forever\n", []string{"p.yaml:4", "setup_timeout", "duration"}},
		{"unknown limit", "profiles:\n  a:\n    limits:\n      swap: 1g\n", []string{"p.yaml:4", "limits.swap", "unknown limit"}},
		{"egress pattern", "profiles:\n  a:\n    egress:\n      session: ['http://x/y']\n", []string{"p.yaml:4", "egress.session"}},
		{"egress key", "profiles:\n  a:\n    egress:\n      always: [x]\n", []string{"p.yaml:4", "egress.always"}},
		{"extends missing", "profiles:\n  a:\n    extends: b\n", []string{"p.yaml:3", "extends", "names no profile"}},
		{"extends cycle", "profiles:\n  a:\n    extends: b\n  b:\n    extends: a\n", []string{"cycle", "a -> b -> a"}},
		{"default missing", "default: c\nprofiles:\n  a: {}\n", []string{"p.yaml:1", "default", "names no profile"}},
		{"profile not a mapping", "profiles:\n  a: [1]\n", []string{"p.yaml:2", "must be a mapping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.file), noEnv)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestEveryErrorIsReported(t *testing.T) {
	_, err := Parse("p.yaml", []byte("profiles:\n  a:\n    imgae: x\n  b:\n    limits:\n      cpus: -1\n"), noEnv)
	if err == nil || !strings.Contains(err.Error(), "imgae") || !strings.Contains(err.Error(), "limits.cpus") {
		t.Fatalf("err = %v, want both mistakes", err)
	}
}

// TestImageKeyHashesEveryInput checks that a change to any input changes
// the key, and that inputs cannot be shifted from one field to another.
func TestImageKeyHashesEveryInput(t *testing.T) {
	base := Profile{Name: "a", Setup: []string{"x", "y"}, Env: map[string]string{"A": "1"}, Egress: Egress{Setup: []string{"h"}}}
	key := base.ImageKey("sha256:1")
	variants := map[string]func(p *Profile) string{
		"name":      func(p *Profile) string { p.Name = "b"; return p.ImageKey("sha256:1") },
		"base":      func(p *Profile) string { return p.ImageKey("sha256:2") },
		"command":   func(p *Profile) string { p.Setup = []string{"x", "z"}; return p.ImageKey("sha256:1") },
		"joined":    func(p *Profile) string { p.Setup = []string{"xy"}; return p.ImageKey("sha256:1") },
		"split":     func(p *Profile) string { p.Setup = []string{"x", "", "y"}; return p.ImageKey("sha256:1") },
		"env value": func(p *Profile) string { p.Env = map[string]string{"A": "2"}; return p.ImageKey("sha256:1") },
		"env name":  func(p *Profile) string { p.Env = map[string]string{"B": "1"}; return p.ImageKey("sha256:1") },
		"egress":    func(p *Profile) string { p.Egress.Setup = nil; return p.ImageKey("sha256:1") },
		"moved": func(p *Profile) string {
			p.Setup = []string{"x", "y", "h"}
			p.Egress.Setup = nil
			return p.ImageKey("sha256:1")
		},
	}
	for name, change := range variants {
		p := base
		if got := change(&p); got == key {
			t.Errorf("changing the %s kept the key", name)
		}
	}
	same := base
	same.Limits.MemoryBytes, same.Description = 5<<30, "other"
	if same.ImageKey("sha256:1") != key {
		t.Error("limits or the description changed the key; they do not change what the setup makes")
	}
}

func TestParseSize(t *testing.T) {
	tests := map[string]int64{"1073741824": 1 << 30, "1g": 1 << 30, "1G": 1 << 30, "512m": 512 << 20, "256MiB": 256 << 20, "64k": 64 << 10, "2gb": 2 << 30}
	for in, want := range tests {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "g", "-1", "1x", "99999999999t"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded", bad)
		}
	}
}

// egress.ssh_agent_hosts is read as patterns (a bad one named with its
// profile and field), and an extending profile adds to its parent's.
func TestSSHAgentHosts(t *testing.T) {
	f, err := Parse("p.yaml", []byte("profiles:\n  a: {egress: {ssh_agent_hosts: [github.com]}}\n  b: {extends: a, egress: {ssh_agent_hosts: ['*.example.org']}}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Profiles["b"].Egress.SSHAgentHosts; len(got) != 2 || got[0] != "github.com" || got[1] != "*.example.org" {
		t.Fatalf("b's ssh_agent_hosts: %v", got)
	}
	if _, err := Parse("p.yaml", []byte("profiles:\n  a: {egress: {ssh_agent_hosts: ['*.com']}}\n"), noEnv); err == nil || !strings.Contains(err.Error(), "egress.ssh_agent_hosts") {
		t.Fatalf("a wildcard over a top-level domain: %v", err)
	}
}

// A profile's ca_bundle is made absolute against the file's folder, and
// an extending profile inherits it.
func TestCABundlePath(t *testing.T) {
	f, err := Parse("/etc/wink/profiles.yaml", []byte("profiles:\n  a: {ca_bundle: certs/ca.pem}\n  b: {extends: a}\n  c: {ca_bundle: /abs/ca.pem}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "/etc/wink/certs/ca.pem", "b": "/etc/wink/certs/ca.pem", "c": "/abs/ca.pem"} {
		if got := f.Profiles[name].CABundle; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if _, err := Parse("p.yaml", []byte("profiles:\n  a: {ca_bundle: ''}\n"), noEnv); err == nil || !strings.Contains(err.Error(), "ca_bundle") {
		t.Fatalf("an empty ca_bundle: %v", err)
	}
}

func TestCDIDevicesMergeWithExtends(t *testing.T) {
	f, err := Parse("p.yaml", []byte("profiles:\n  base:\n    cdi_devices: [example.com/a=x]\n  gpu:\n    extends: base\n    cdi_devices: [nvidia.com/gpu=all]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Profiles["gpu"].CDIDevices, ","); got != "example.com/a=x,nvidia.com/gpu=all" {
		t.Errorf("cdi_devices %q: want the parent's then the child's", got)
	}
}

package profiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// everyValue sets every value a profile holds from the environment.
const everyValue = `default: ${P_DEFAULT}
profiles:
  base:
    description: base for ${P_WHO}
    image: ${P_REGISTRY}/workspace:${P_TAG}
  app:
    extends: ${P_PARENT}
    setup:
      - echo ${P_VALUE} > /etc/value
      - echo "$${HOME} $HOME ${HOME:-x}" > /etc/shell
    env:
      TOKEN_FILE: ${P_VALUE}/token
    workdir: ${P_DIR}
    limits:
      memory: ${P_MEMORY}
      command_timeout: ${P_TIMEOUT}
    egress:
      setup: ["${P_MIRROR}"]
      session: ["*.${P_DOMAIN}"]
    mounts: ["${P_HOME}/src:src"]
`

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func everyValueEnv() map[string]string {
	return map[string]string{"P_DEFAULT": "app", "P_WHO": "ada", "P_REGISTRY": "registry.example", "P_TAG": "v1", "P_PARENT": "base",
		"P_VALUE": "one", "P_DIR": "proj", "P_MEMORY": "2g", "P_TIMEOUT": "90s", "P_MIRROR": "mirror.example",
		"P_DOMAIN": "pkg.example", "P_HOME": "/home/ada"}
}

// TestExpandEveryValue checks that ${NAME} is expanded in every value of
// the file, setup commands included, and that $${NAME} and the shell's own
// forms reach the shell as written.
func TestExpandEveryValue(t *testing.T) {
	f, err := Parse("p.yaml", []byte(everyValue), lookupIn(everyValueEnv()))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Profiles["app"]
	checks := map[string][2]string{
		"default":          {f.Default, "app"},
		"description":      {p.Description, "base for ada"},
		"image":            {p.Image, "registry.example/workspace:v1"},
		"setup":            {p.Setup[0], "echo one > /etc/value"},
		"setup escape":     {p.Setup[1], `echo "${HOME} $HOME ${HOME:-x}" > /etc/shell`},
		"setup as written": {p.SetupSource[0], "echo ${P_VALUE} > /etc/value"},
		"env":              {p.Env["TOKEN_FILE"], "one/token"},
		"workdir":          {p.Workdir, "proj"},
		"limits.memory":    {fmt.Sprint(p.Limits.MemoryBytes), fmt.Sprint(2 << 30)},
		"limits.timeout":   {p.Limits.CommandTimeout.String(), "1m30s"},
		"egress.setup":     {strings.Join(p.Egress.Setup, ","), "mirror.example"},
		"egress.session":   {strings.Join(p.Egress.Session, ","), "*.pkg.example"},
		"mounts":           {p.Mounts[0].Spec, "/home/ada/src:src"},
	}
	for field, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: %q, want %q", field, c[0], c[1])
		}
	}
}

// TestUnsetVariablesNameTheLine leaves each variable unset in turn: the
// file is refused, naming the line, the field and how to write the text.
func TestUnsetVariablesNameTheLine(t *testing.T) {
	lines := strings.Split(everyValue, "\n")
	for name := range everyValueEnv() {
		t.Run(name, func(t *testing.T) {
			env := everyValueEnv()
			delete(env, name)
			_, err := Parse("p.yaml", []byte(everyValue), lookupIn(env))
			if err == nil {
				t.Fatal("accepted")
			}
			line := 0
			for i, l := range lines {
				if strings.Contains(l, "${"+name+"}") {
					line = i + 1
				}
			}
			for _, want := range []string{fmt.Sprintf("p.yaml:%d:", line), "${" + name + "} is not set", "$${" + name + "}"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	if _, err := Parse("p.yaml", []byte("profiles:\n  a:\n    setup: ['echo ${EMPTY}']\n"), lookupIn(map[string]string{"EMPTY": ""})); err == nil ||
		!strings.Contains(err.Error(), "p.yaml:3") {
		t.Errorf("an empty variable: %v, want it refused as unset", err)
	}
}

// TestExpandedValuesChangeTheKey checks that the image key follows the
// values the environment gives, in every input of the image.
func TestExpandedValuesChangeTheKey(t *testing.T) {
	key := func(env map[string]string) string {
		f, err := Parse("p.yaml", []byte(everyValue), lookupIn(env))
		if err != nil {
			t.Fatal(err)
		}
		return f.Profiles["app"].ImageKey("sha256:1")
	}
	first := key(everyValueEnv())
	for _, name := range []string{"P_VALUE", "P_MIRROR"} {
		env := everyValueEnv()
		env[name] += "-changed"
		if key(env) == first {
			t.Errorf("changing %s kept the image key", name)
		}
	}
	env := everyValueEnv()
	env["P_MEMORY"], env["P_WHO"] = "3g", "bob"
	if key(env) != first {
		t.Error("a limit or the description changed the image key")
	}
}

// TestImageKeyNamesTheFile checks that one profile in two files gets two
// keys, and one file named by two paths (relative, through a link) one.
func TestImageKeyNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	text := []byte("profiles:\n  app:\n    setup: [make]\n")
	for _, name := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	key := func(path string) string {
		f, err := Load(path, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		return f.Profiles["app"].ImageKey("sha256:1")
	}
	a := key(filepath.Join(dir, "a.yaml"))
	if key(filepath.Join(dir, "b.yaml")) == a {
		t.Error("two files' profiles of one name got one key")
	}
	if key(filepath.Join(dir, "link.yaml")) != a {
		t.Error("a link to the file got another key")
	}
	t.Chdir(dir)
	if key("a.yaml") != a {
		t.Error("a relative path to the file got another key")
	}
}

package devcontainer

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadDevcontainer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		".devcontainer/devcontainer.json": `{
	// a comment, as the spec allows
	"name": "demo", /* block */
	"build": {"dockerfile": "Dockerfile", "context": ".."},
	"containerEnv": {"GREETING": "hi // not a comment", "HOSTHOME": "${localEnv:HOME}"},
	"remoteUser": "1000",
	"postCreateCommand": ["echo", "it's made"],
	"forwardPorts": [8080, "db:5432",],
	"customizations": {"vscode": {}},
	"privileged": false,
}`,
		".devcontainer/Dockerfile": "FROM x\n",
		"Dockerfile":               "FROM y\n",
	})
	f, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.Source != SourceDevcontainer || f.Dockerfile != ".devcontainer/Dockerfile" || f.Context != "." || f.Image != "" {
		t.Fatalf("found %+v", f)
	}
	if f.Env["GREETING"] != "hi // not a comment" || len(f.Env) != 1 {
		t.Errorf("env %v: want GREETING only, the ${localEnv} one left out", f.Env)
	}
	if f.User != "1000:1000" || f.PostCreate != `'echo' 'it'\''s made'` {
		t.Errorf("user %q post-create %q", f.User, f.PostCreate)
	}
	if len(f.ForwardPorts) != 2 || f.ForwardPorts[1] != 5432 {
		t.Errorf("ports %v", f.ForwardPorts)
	}
	ignored := strings.Join(f.Ignored, "; ")
	for _, want := range []string{"name (", "customizations (", "privileged (", "containerEnv.HOSTHOME"} {
		if !strings.Contains(ignored, want) {
			t.Errorf("ignored %q lacks %q", ignored, want)
		}
	}
}

func TestReadRefusesWhatWeakensTheSandbox(t *testing.T) {
	t.Parallel()
	for _, field := range []string{`"privileged": true`, `"capAdd": ["SYS_ADMIN"]`, `"runArgs": ["--network=host"]`,
		`"mounts": ["source=/,target=/host,type=bind"]`, `"securityOpt": ["seccomp=unconfined"]`, `"init": "/bin/evil"`} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write(t, dir, map[string]string{".devcontainer.json": `{"image": "debian", ` + field + `}`})
			_, err := Read(dir)
			name := strings.Trim(strings.SplitN(field, ":", 2)[0], `"`)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), name) {
				t.Fatalf("err %v: want a refusal naming %s", err, name)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, want string }{
		{"no image", `{"name": "x"}`, "neither an image nor a build.dockerfile"},
		{"dockerfile out", `{"build": {"dockerfile": "../../etc/passwd"}}`, "leads out of the project folder"},
		{"absolute", `{"build": {"dockerfile": "/etc/passwd"}}`, "is absolute"},
		{"missing dockerfile", `{"build": {"dockerfile": "Nope"}}`, "is not a file in the folder"},
		{"bad env", `{"image": "x", "containerEnv": {"A-B": "1"}}`, "is not a variable name"},
		{"bad port", `{"image": "x", "forwardPorts": [70000]}`, "outside 1-65535"},
		{"unclosed", `{"image": "x" /* }`, "never closed"},
		{"root user", `{"image": "x", "remoteUser": "root", "oops": }`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write(t, dir, map[string]string{".devcontainer.json": tt.body})
			if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), ".devcontainer.json") {
				t.Fatalf("err %v: want %q naming the file", err, tt.want)
			}
		})
	}
}

func TestReadUser(t *testing.T) {
	t.Parallel()
	for user, want := range map[string]string{"root": "", "0": "", "0:0": "", "vscode": "", "1000:100": "1000:100", "42": "42:42"} {
		f := &Found{}
		f.readUser(user)
		if f.User != want || (want == "" && len(f.Ignored) != 1) {
			t.Errorf("remoteUser %q: user %q ignored %v", user, f.User, f.Ignored)
		}
	}
}

func TestReadDockerfileAndNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if f, err := Read(dir); f != nil || err != nil {
		t.Fatalf("empty folder: %+v %v", f, err)
	}
	write(t, dir, map[string]string{"Containerfile": "FROM x\n"})
	f, err := Read(dir)
	if err != nil || f.Source != SourceDockerfile || f.Dockerfile != "Containerfile" || f.Context != "." {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestCheckDockerfile(t *testing.T) {
	t.Parallel()
	ok := "FROM debian\n# ADD https://in.a/comment\nRUN apt-get update && \\\n  apt-get install -y curl\nCOPY . /src\nADD local.tar /x\n"
	if err := CheckDockerfile("Dockerfile", []byte(ok)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"ADD https://example.org/x /x", "ADD --chmod=644 \\\n  HTTP://example.org/x /x",
		`ADD ["git@example.org:a/b.git", "/b"]`, "RUN --network=host curl x", "RUN --mount=type=cache,target=/c --security=insecure true"} {
		err := CheckDockerfile("Dockerfile", []byte("FROM debian\n"+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "Dockerfile line 2") {
			t.Errorf("%q: err %v, want a refusal naming line 2", bad, err)
		}
	}
}

func TestPack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{"Dockerfile": "FROM x\n", "src/a.go": "package a\n", "node_modules/big/x.js": "x",
		"keep/y.txt": "y", "keep/z.log": "z", ".dockerignore": "node_modules\n**/*.log\nDockerfile\n"})
	if err := os.Symlink("src/a.go", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	var one, two bytes.Buffer
	p1, err := Pack(dir, ".", "Dockerfile", ContextLimits{}, &one)
	if err != nil {
		t.Fatal(err)
	}
	// Same content at another time gives the same hash.
	if err := os.Chtimes(filepath.Join(dir, "src/a.go"), fixedTime, fixedTime); err != nil {
		t.Fatal(err)
	}
	p2, err := Pack(dir, ".", "Dockerfile", ContextLimits{}, &two)
	if err != nil || p2.Hash != p1.Hash {
		t.Fatalf("repacked: %v, hash %s then %s", err, p1.Hash, p2.Hash)
	}
	listing := tarNames(t, one.Bytes())
	for _, name := range []string{"Dockerfile", "src/a.go", "keep/y.txt", "inside", ".dockerignore"} {
		if !strings.Contains(listing, name+"\n") {
			t.Errorf("context lacks %s:\n%s", name, listing)
		}
	}
	for _, name := range []string{"node_modules", "z.log"} {
		if strings.Contains(listing, name) {
			t.Errorf("context holds ignored %s:\n%s", name, listing)
		}
	}
	write(t, dir, map[string]string{"src/a.go": "package b\n"})
	if p3, _ := Pack(dir, ".", "Dockerfile", ContextLimits{}, io.Discard); p3.Hash == p1.Hash {
		t.Error("a changed file kept the hash")
	}
}

func TestPackRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(dir string) error
		limits ContextLimits
		want   string
	}{
		{"link out", func(dir string) error { return os.Symlink("/etc/shadow", filepath.Join(dir, "secret")) }, ContextLimits{}, "secret in the build context is a link to /etc/shadow"},
		{"link up", func(dir string) error { return os.Symlink("../../x", filepath.Join(dir, "sub", "up")) }, ContextLimits{}, "outside the context"},
		{"too many files", func(dir string) error { return nil }, ContextLimits{MaxFiles: 2}, "over 2 files"},
		{"too many bytes", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("x"), 4096), 0o644)
		}, ContextLimits{MaxBytes: 1000}, "over 1000 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write(t, dir, map[string]string{"Dockerfile": "FROM x\n", "sub/f": "f"})
			if err := tt.setup(dir); err != nil {
				t.Fatal(err)
			}
			_, err := Pack(dir, ".", "Dockerfile", tt.limits, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestIgnoreRulesLastMatchDecides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{".dockerignore": "# comment\nbuild\n!build/keep.txt\n/secret*\n"})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rules, err := readIgnore(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"build": true, "build/a/b.o": true, "build/keep.txt": false,
		"secret.pem": true, "src/secret.pem": false, "src/main.go": false} {
		if got := rules.excludes(name); got != want {
			t.Errorf("%s: excluded %v, want %v", name, got, want)
		}
	}
	if !rules.negates {
		t.Error("a ! rule must keep excluded folders walked")
	}
}

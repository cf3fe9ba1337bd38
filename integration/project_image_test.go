package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeProject writes files (path: content) into a new folder.
func writeProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// projectImagesOf lists the images --project-image built for dir.
func projectImagesOf(t *testing.T, dir string) []string {
	t.Helper()
	var images []string
	for _, image := range profileImagesOf(t, "project") {
		label, err := podman(t, "image", "inspect", "--format", `{{index .Labels "io.wink-mcp.profile-file"}}`, image)
		if err == nil && strings.TrimSpace(label) == "project:"+dir {
			images = append(images, image)
		}
	}
	return images
}

// TestDockerfileProjectStartsInItsImage mounts a folder with a
// Dockerfile whose RUN step installs a Debian package through the egress
// allowlist (the build has no network device: only the proxy) and starts
// the session in the image it built, with every hardening setting; a
// second server finds the image cached.
func TestDockerfileProjectStartsInItsImage(t *testing.T) {
	mirror := aptMirrorHost(t)
	dir := writeProject(t, map[string]string{
		"Dockerfile": "FROM " + pythonImage + "\n" +
			"RUN apt-get update -q && apt-get install -y -q --no-install-recommends hello\n" +
			"COPY marker.txt /opt/marker.txt\nCOPY . /opt/context/\n",
		"marker.txt":    "made-by-the-dockerfile\n",
		"secret.txt":    "never-in-the-image\n",
		".dockerignore": "secret.txt\n",
	})
	t.Cleanup(func() {
		for _, image := range projectImagesOf(t, dir) {
			_, _ = podman(t, "rmi", "-f", image)
		}
	})
	args := []string{"--mount", dir + ":project:ro", "--allowed-root", dir, "--project-image", "--egress", mirror, "--warm", "0"}
	// Over HTTP: the harness ends an HTTP server with SIGTERM and waits,
	// where a stdio client kills its server 5 s after closing stdin,
	// which a loaded machine's container removal can outlast.
	p := start(t, startOptions{transport: "http", image: pythonImage, args: args})
	if text := p.promptText(); !strings.Contains(text, "from Dockerfile") {
		t.Errorf("the prompt does not say what was found:\n%s", text)
	}
	out := p.run("sh", "-c", "hello; cat /opt/marker.txt; ls /opt/context; grep CapEff /proc/self/status; id -u; cat /workspace/project/marker.txt")
	for _, want := range []string{"Hello, world!", "made-by-the-dockerfile", "CapEff:\t0000000000000000", "65534"} {
		if !strings.Contains(out.Stdout, want) {
			t.Errorf("the session's output lacks %q:\n%s\n%s", want, out.Stdout, out.Stderr)
		}
	}
	if strings.Contains(out.Stdout, "secret.txt") {
		t.Errorf("the build context held a file .dockerignore names:\n%s", out.Stdout)
	}
	built := projectImagesOf(t, dir)
	image, err := podman(t, "inspect", "--format", "{{.Config.Image}} {{.HostConfig.NetworkMode}} {{.HostConfig.Privileged}}", p.container())
	if len(built) != 1 || err != nil || !strings.HasPrefix(image, built[0]+" none false") {
		t.Errorf("the container runs %q (%v); want the one project image %v, no network, unprivileged", image, err, built)
	}
	if left := containersNamed(t, p.prefix+"-build"); len(left) != 0 {
		t.Errorf("the build's network container is left: %v", left)
	}
	// A second server finds the image of the same context: no build.
	q := start(t, startOptions{transport: "http", image: pythonImage, args: args})
	if out := q.run("hello"); !strings.Contains(out.Stdout, "Hello, world!") {
		t.Errorf("second server: %q", out.Stdout)
	}
	if strings.Contains(q.logs.String(), "project_build_started") {
		t.Errorf("the second server built the image again")
	}
}

// TestDevcontainerProjectStartsInItsImage mounts a folder with a
// devcontainer.json (comments, a build, containerEnv, a numeric
// remoteUser, postCreateCommand, forwardPorts and fields wink-mcp does
// not read) and starts the session in its image, as it says.
func TestDevcontainerProjectStartsInItsImage(t *testing.T) {
	dir := writeProject(t, map[string]string{
		".devcontainer/devcontainer.json": `{
	// The Dev Container spec allows comments and trailing commas.
	"name": "demo",
	"build": {"dockerfile": "Dockerfile"},
	"containerEnv": {"PROJECT_FLAVOUR": "devcontainer"},
	"remoteUser": "1234:1234",
	"postCreateCommand": "echo created > /tmp/post-create",
	"forwardPorts": [8080],
	"customizations": {"vscode": {"extensions": ["golang.go"]}},
}`,
		".devcontainer/Dockerfile": "FROM " + testImage + "\nRUN echo devcontainer-built > /devc-marker\n",
	})
	t.Cleanup(func() {
		for _, image := range projectImagesOf(t, dir) {
			_, _ = podman(t, "rmi", "-f", image)
		}
	})
	p := start(t, startOptions{transport: "http", image: testImage, args: []string{"--mount", dir + ":project:ro", "--allowed-root", dir, "--project-image", "--warm", "0"}})
	text := p.promptText()
	for _, want := range []string{"from .devcontainer/devcontainer.json", "ignored: customizations", "ports [8080]"} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, text)
		}
	}
	if info := textOf(p.call("workspace_info", map[string]any{})); !strings.Contains(info, "image localhost/wink-profile:project-") ||
		!strings.Contains(info, "profile project") {
		t.Errorf("workspace_info does not name the project's image:\n%s", info)
	}
	out := p.run("sh", "-c", "cat /devc-marker; echo $PROJECT_FLAVOUR; id -u; cat /tmp/post-create")
	if got := strings.Fields(out.Stdout); strings.Join(got, " ") != "devcontainer-built devcontainer 1234 created" {
		t.Errorf("session: %q %q", out.Stdout, out.Stderr)
	}
	if !strings.Contains(p.logs.String(), "ignored") {
		t.Errorf("the log does not name the ignored fields")
	}
}

// TestProjectImagesRefuseWhatWeakensTheSandbox starts servers on
// projects that ask for what the sandbox never grants, or that cannot be
// built: each is refused with a message naming what and why, and leaves
// no image and no container.
func TestProjectImagesRefuseWhatWeakensTheSandbox(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
		atRun bool // refused at the first call rather than at start
	}{
		{"RUN to a host not allowed", map[string]string{"Dockerfile": "FROM " + pythonImage + "\n" +
			"RUN python3 -c \"import urllib.request; urllib.request.urlopen('http://not-allowed.example/')\"\n"},
			"- not-allowed.example:80: no --egress pattern allows it (allowed: allowed.example). If the build of", true},
		{"privileged", map[string]string{".devcontainer.json": `{"image": "x", "privileged": true, "capAdd": ["SYS_ADMIN"]}`}, "capAdd, privileged", false},
		{"ADD of a URL", map[string]string{"Dockerfile": "FROM " + testImage + "\nADD https://not-allowed.example/x /x\n"}, "ADD https://not-allowed.example/x", true},
		{"FROM missing", map[string]string{"Dockerfile": "FROM localhost/wink-no-such-image:nope\nRUN true\n"}, "its FROM image is neither on this engine nor could it be pulled", true},
		{"link out", map[string]string{"Dockerfile": "FROM " + testImage + "\n"}, "is a link to /etc/shadow, outside the context", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeProject(t, tc.files)
			if tc.name == "link out" {
				if err := os.Symlink("/etc/shadow", filepath.Join(dir, "shadow")); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"--mount", dir + ":project:ro", "--allowed-root", dir, "--project-image", "--warm", "0",
				"--egress", "allowed.example"}
			if !tc.atRun {
				out, err := exec.Command(winkBin, append(args, "--podman-url", "unix://"+podmanSocket)...).CombinedOutput()
				if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) ||
					!strings.Contains(string(out), "hardening always wins") {
					t.Errorf("exit %v, %q; want 2 and a refusal naming %q", err, out, tc.want)
				}
				return
			}
			p := start(t, startOptions{image: testImage, args: args})
			res := p.call("podman_shell", map[string]any{"command": []string{"true"}})
			if text := textOf(res); !res.IsError || !strings.Contains(text, tc.want) {
				t.Errorf("first call: %q; want an error naming %q", text, tc.want)
			}
			if images := projectImagesOf(t, dir); len(images) != 0 {
				t.Errorf("images left: %v", images)
			}
			// The session's prestart and its first call may each have
			// tried the build: the later try's container goes when it
			// fails too.
			waitUntil(t, 60*time.Second, "the build's network containers to go", func() bool {
				return len(containersNamed(t, p.prefix+"-build")) == 0
			})
		})
	}
}

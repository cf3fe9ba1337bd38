package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// profilesFile writes a profiles file, replacing IMAGE and PY_IMAGE with
// the test images and NONCE with a value of this run, so that every run
// builds its images anew; it returns the file's path and the nonce.
func profilesFile(t *testing.T, text string) (string, string) {
	t.Helper()
	nonce := randomHex(6)
	text = strings.NewReplacer("PY_IMAGE", pythonImage, "IMAGE", testImage, "NONCE", nonce).Replace(text)
	path := filepath.Join(t.TempDir(), "profiles.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeProfileImages(t, nonce) })
	return path, nonce
}

// removeProfileImages removes the profile images whose names hold nonce
// (each test's profiles are named after it).
func removeProfileImages(t *testing.T, nonce string) {
	out, _ := podman(t, "images", "--filter", "label=io.wink-mcp.profile", "--format", "{{.Repository}}:{{.Tag}}")
	for _, image := range strings.Fields(out) {
		if strings.Contains(image, nonce) {
			_, _ = podman(t, "rmi", "-f", image)
		}
	}
}

// profileImagesOf lists the images built for the profile called name.
func profileImagesOf(t *testing.T, name string) []string {
	t.Helper()
	out, err := podman(t, "images", "--filter", "label=io.wink-mcp.profile="+name, "--format", "{{.Repository}}:{{.Tag}}")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)
}

// profileImagesOfFile lists the images the profiles file built for its
// profile called name: another file's profile of that name has its own.
func profileImagesOfFile(t *testing.T, name, file string) []string {
	t.Helper()
	id, err := filepath.EvalSymlinks(file)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, image := range profileImagesOf(t, name) {
		label, err := podman(t, "image", "inspect", "--format", `{{index .Labels "io.wink-mcp.profile-file"}}`, image)
		if err == nil && strings.TrimSpace(label) == id {
			images = append(images, image)
		}
	}
	return images
}

// profilesCLI runs `wink-mcp profiles ARGS --profiles FILE` with the
// harness's Podman service.
func profilesCLI(t *testing.T, file, cache string, args ...string) (string, error) {
	t.Helper()
	args = append(args, "--profiles", file, "--cache-dir", cache, "--podman-url", "unix://"+podmanSocket, "--log-level", "warn")
	out, err := exec.Command(winkBin, append([]string{"profiles"}, args...)...).CombinedOutput()
	return string(out), err
}

// useProfile calls workspace_profile and decodes its result.
func (p *proc) useProfile(name string, restart bool) tools.WorkspaceProfileResult {
	p.t.Helper()
	res := p.call("workspace_profile", map[string]any{"name": name, "restart": restart})
	if res.IsError {
		p.t.Fatalf("workspace_profile %s: %s", name, textOf(res))
	}
	var out tools.WorkspaceProfileResult
	decodeStructured(p.t, res, &out)
	return out
}

const twoToolchains = `profiles:
  alpha-NONCE:
    description: alpha tools on busybox
    image: IMAGE
    setup:
      - printf '#!/bin/sh\necho alpha-tool\n' > /bin/tool && chmod 755 /bin/tool
    env: {TOOLCHAIN: alpha}
    workdir: src
    limits: {memory: 96m, pids: 100, command_timeout: 2s}
  beta-NONCE:
    description: beta tools on the workspace image
    image: PY_IMAGE
    setup:
      - printf '#!/bin/sh\necho beta-tool\n' > /usr/local/bin/tool && chmod 755 /usr/local/bin/tool
    env: {TOOLCHAIN: beta}
`

// TestProfilesGiveSessionsTheirToolchains serves two profiles from one
// HTTP (and one SSE) server: one session starts with alpha (?profile=),
// another switches to beta with workspace_profile, and each sees its own
// toolchain, image, environment, working directory and limits.
func TestProfilesGiveSessionsTheirToolchains(t *testing.T) {
	for _, tr := range []string{"http", "sse"} {
		t.Run(tr, func(t *testing.T) { twoProfilesInOneServer(t, tr) })
	}
}

func twoProfilesInOneServer(t *testing.T, transport string) {
	file, nonce := profilesFile(t, twoToolchains)
	alpha, beta := "alpha-"+nonce, "beta-"+nonce
	p := start(t, startOptions{transport: transport, args: []string{"--profiles", file, "--warm", "0"}})
	if text := p.promptText(); !strings.Contains(text, alpha) || !strings.Contains(text, "beta tools on the workspace image") {
		t.Errorf("the prompt does not list the profiles:\n%s", text)
	}
	if transport == "http" {
		if code, body := post(t, p.url+"?profile=nope", nil, initializeBody); code != 400 || !strings.Contains(body, alpha) {
			t.Errorf("?profile=nope: %d %q, want 400 listing the profiles", code, body)
		}
	}

	a := p.sibling(nil, "?profile="+alpha)
	out := a.run("sh", "-c", "tool; echo $TOOLCHAIN; pwd")
	if got := strings.Fields(out.Stdout); len(got) != 3 || got[0] != "alpha-tool" || got[1] != "alpha" || got[2] != "/workspace/src" {
		t.Errorf("alpha session: %q %q", out.Stdout, out.Stderr)
	}
	limits, err := podman(t, "inspect", "--format", "{{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.Config.Image}}", a.container())
	if err != nil || !strings.HasPrefix(limits, "100663296 100 localhost/wink-profile:"+alpha+"-") {
		t.Errorf("alpha container: %q %v; want the profile's memory, pids and image", limits, err)
	}
	start := time.Now()
	if slept := a.run("sleep", "30"); !slept.TimedOut || time.Since(start) > 20*time.Second {
		t.Errorf("a command without timeout_seconds: timed out %v after %s; want the profile's 2 s", slept.TimedOut, time.Since(start))
	}

	b := p.sibling(nil, "")
	b.run("sh", "-c", "echo mine > notes.txt")
	if out := b.run("sh", "-c", "command -v tool || echo none"); strings.TrimSpace(out.Stdout) != "none" {
		t.Errorf("before choosing a profile: %q", out.Stdout)
	}
	res := b.call("workspace_profile", map[string]any{"name": beta})
	if !res.IsError || !strings.Contains(textOf(res), "restart: true") {
		t.Fatalf("switching a used container without restart: %s; want a refusal naming restart", textOf(res))
	}
	switched := b.useProfile(beta, true)
	if !switched.Built || !switched.Restarted || switched.Workdir != "/workspace" {
		t.Errorf("workspace_profile: %+v", switched)
	}
	out = b.run("sh", "-c", "tool; echo $TOOLCHAIN; python3 -c 'print(6*7)'; cat notes.txt")
	if got := strings.Fields(out.Stdout); len(got) != 4 || got[0] != "beta-tool" || got[1] != "beta" || got[2] != "42" || got[3] != "mine" {
		t.Errorf("beta session: %q %q", out.Stdout, out.Stderr)
	}
	if again := b.useProfile(beta, false); again.Built || again.Restarted {
		t.Errorf("choosing the same profile again: %+v; want nothing done", again)
	}
	// The first session is untouched by the second's choice.
	if out := a.run("tool"); strings.TrimSpace(out.Stdout) != "alpha-tool" {
		t.Errorf("alpha session after beta's switch: %q", out.Stdout)
	}
}

// TestProfileSetupRunsOnceForConcurrentFirstSessions starts five sessions
// at once on a profile whose image is not built: one setup runs, all five
// wait for it, and a sixth starts from the cached image. Two processes
// building one profile at once also build it once.
func TestProfileSetupRunsOnceForConcurrentFirstSessions(t *testing.T) {
	file, nonce := profilesFile(t, `profiles:
  slow-NONCE:
    image: IMAGE
    setup:
      - sleep 2; touch /etc/setup-ran-$(date +%s%N)
  other-NONCE:
    image: IMAGE
    setup:
      - sleep 2; touch /etc/setup-ran-$(date +%s%N)
`)
	name := "slow-" + nonce
	p := start(t, startOptions{transport: "http", args: []string{"--profiles", file, "--warm", "0", "--lazy"}})
	sessions := make([]*proc, 6)
	for i := range sessions {
		sessions[i] = p.sibling(nil, "")
	}
	results := make([]tools.WorkspaceProfileResult, 5)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = sessions[i].useProfile(name, false)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if !r.Built || r.Image != results[0].Image {
			t.Errorf("session %d: %+v; want it to have waited for the one build", i, r)
		}
	}
	if n := p.logs.count("profile_setup_started"); n != 1 {
		t.Errorf("%d setups ran for five concurrent first sessions, want 1", n)
	}
	sixth := sessions[5].useProfile(name, false)
	if sixth.Built || sixth.Image != results[0].Image {
		t.Errorf("sixth session: %+v; want the cached image", sixth)
	}
	if out := sessions[5].run("sh", "-c", "ls /etc | grep -c setup-ran-"); strings.TrimSpace(out.Stdout) != "1" {
		t.Errorf("the image holds %q setup marks, want 1", out.Stdout)
	}

	// Two processes: one builds, the other waits for its lock and finds the image.
	cache := t.TempDir()
	outs := make([]string, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := profilesCLI(t, file, cache, "build", "other-"+nonce)
			if err != nil {
				t.Errorf("profiles build: %v\n%s", err, out)
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	joined := strings.Join(outs, "\n")
	if strings.Count(joined, ": built ") != 1 || strings.Count(joined, "is up to date") != 1 {
		t.Errorf("two processes building one profile:\n%s\nwant one build and one up to date", joined)
	}
	if images := profileImagesOf(t, "other-"+nonce); len(images) != 1 {
		t.Errorf("images %v, want one", images)
	}
}

// TestProfileInputsChangeTheImage changes a setup command, then the base
// image under the same tag: each change builds a new image, and the older
// one is pruned.
func TestProfileInputsChangeTheImage(t *testing.T) {
	nonce := randomHex(6)
	base := "localhost/wink-test-base-" + nonce + ":latest"
	if out, err := podman(t, "tag", testImage, base); err != nil {
		t.Fatal(out, err)
	}
	t.Cleanup(func() { _, _ = podman(t, "rmi", "-f", base) })
	name := "p-" + nonce
	dir, cache := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "profiles.yaml")
	write := func(version string) {
		text := "profiles:\n  " + name + ":\n    image: " + base + "\n    setup: [\"echo " + version + " > /etc/version\"]\n"
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { removeProfileImages(t, nonce) })
	version := func() string {
		p := start(t, startOptions{args: []string{"--profiles", file, "--profile", name}})
		return strings.TrimSpace(p.run("sh", "-c", "cat /etc/version; cat /etc/base 2>/dev/null").Stdout)
	}

	write("v1")
	if out, err := profilesCLI(t, file, cache, "build"); err != nil || !strings.Contains(out, ": built ") {
		t.Fatalf("build v1: %v\n%s", err, out)
	}
	if out, _ := profilesCLI(t, file, cache, "build"); !strings.Contains(out, "is up to date") {
		t.Errorf("an unchanged profile built again:\n%s", out)
	}
	write("v2")
	if got := version(); got != "v2" {
		t.Errorf("after the setup changed a session sees %q, want v2", got)
	}
	if images := profileImagesOf(t, name); len(images) != 1 {
		t.Errorf("images of the profile %v: want the v1 image pruned", images)
	}

	// The base retagged to other content.
	ctr := "wink-test-base-" + nonce
	if out, err := podman(t, "run", "--name", ctr, testImage, "sh", "-c", "echo newbase > /etc/base"); err != nil {
		t.Fatal(out, err)
	}
	if out, err := podman(t, "commit", "-q", ctr, base); err != nil {
		t.Fatal(out, err)
	}
	_, _ = podman(t, "rm", "-f", ctr)
	if out, _ := profilesCLI(t, file, cache, "list"); !strings.Contains(out, name) || !strings.Contains(out, " no ") {
		t.Errorf("profiles list after the base changed:\n%s\nwant it not built", out)
	}
	if got := version(); got != "v2\nnewbase" {
		t.Errorf("after the base changed a session sees %q, want the setup on the new base", got)
	}
}

// TestFailedSetupsSayWhy runs setups that fail, hang and fill the disk:
// each call gets an error with what went wrong and the command's output,
// and no image or container is left.
func TestFailedSetupsSayWhy(t *testing.T) {
	file, nonce := profilesFile(t, `profiles:
  fails-NONCE:
    image: IMAGE
    setup:
      - echo fine
      - echo out-marker; echo err-marker >&2; exit 7
  hangs-NONCE:
    image: IMAGE
    setup: ["echo started; sleep 600"]
    limits: {setup_timeout: 2s}
  fills-NONCE:
    image: IMAGE
    setup: ["i=0; while true; do head -c 8388608 /dev/zero > /f$i; i=$((i+1)); sleep 0.05; done"]
    limits: {setup_disk: 32m}
`)
	p := start(t, startOptions{transport: "http", args: []string{"--profiles", file, "--warm", "0"}})
	for _, tc := range []struct{ profile, want string }{
		{"fails-", "setup command 2 of 2 exited with status 7"},
		{"hangs-", "stopped at limits.setup_timeout (2s)"},
		{"fills-", "more than limits.setup_disk (32.0 MiB)"},
	} {
		name := tc.profile + nonce
		res := p.call("workspace_profile", map[string]any{"name": name})
		text := textOf(res)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s: %q, want an error containing %q", name, text, tc.want)
		}
		if tc.profile == "fails-" && (!strings.Contains(text, "out-marker") || !strings.Contains(text, "err-marker")) {
			t.Errorf("%s: the error lacks the command's output: %q", name, text)
		}
		if images := profileImagesOf(t, name); len(images) != 0 {
			t.Errorf("%s left images %v", name, images)
		}
	}
	if left := containersNamed(t, p.prefix+"-setup"); len(left) != 0 {
		t.Errorf("setup containers left: %v", left)
	}
	// The session still works, on the server's image.
	if out := p.run("echo", "ok"); strings.TrimSpace(out.Stdout) != "ok" {
		t.Errorf("after the failures: %q", out.Stdout)
	}
}

// TestBadProfileFilesNameTheLine starts wink-mcp with bad profiles files:
// it exits 2 before serving, naming the file, line, profile and field.
func TestBadProfileFilesNameTheLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ text, want string }{
		{"profiles:\n  a:\n    image: x\n    setup: make\n", "profiles.yaml:4: profile \"a\": setup: must be a list"},
		{"profiles:\n  a:\n    limits:\n      memory: lots\n", "profiles.yaml:4: profile \"a\": limits.memory"},
		{"profiles:\n  a:\n    egress:\n      setup: [\"${WINK_TEST_UNSET_HOST}\"]\n", "profiles.yaml:4: profile \"a\": egress.setup[0]: ${WINK_TEST_UNSET_HOST} is not set"},
		{"profiles:\n  a:\n    extends: b\n", "profiles.yaml:3: profile \"a\": extends: names no profile"},
		{"profiles:\n  a: {image: [}\n", "profiles.yaml"},
	} {
		file := filepath.Join(dir, "profiles.yaml")
		if err := os.WriteFile(file, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(winkBin, "--profiles", file, "--podman-url", "unix://"+podmanSocket)
		out, err := cmd.CombinedOutput()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: exit %v, output %q; want exit 2 naming %q", tc.text, err, out, tc.want)
		}
	}
	file, _ := profilesFile(t, "profiles:\n  fine:\n    image: IMAGE\n    setup: [\"true\"]\n")
	out, _ := exec.Command(winkBin, "doctor", "--profiles", file, "--podman-url", "unix://"+podmanSocket, "--image", testImage).CombinedOutput()
	if !strings.Contains(string(out), "profiles") || !strings.Contains(string(out), file+" is valid: fine (not built)") {
		t.Errorf("doctor:\n%s\nwant a profiles line naming the file", out)
	}
}

// TestEnvPassAndGitIdentity checks that --env-pass passes the variables
// that match and nothing else, never logging them, and that --git-identity
// gives git the user's name and email and nothing else of the host's git
// configuration: no credential helper, no rewritten URLs.
func TestEnvPassAndGitIdentity(t *testing.T) {
	home := t.TempDir()
	gitconfig := "[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n[credential]\n\thelper = store\n" +
		"[url \"https://mirror.invalid/\"]\n\tinsteadOf = https://github.com/\n[core]\n\tsshCommand = ssh -i /host/key\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, startOptions{image: pythonImage, args: []string{"--env-pass", "WINKTEST_SECRET_*", "--git-identity"},
		env: []string{"HOME=" + home, "WINKTEST_SECRET_A=alpha-s3cret", "WINKTEST_SECRET_B=beta", "WINKTEST_OTHER=other-value"}})
	env := p.run("env").Stdout
	if !strings.Contains(env, "WINKTEST_SECRET_A=alpha-s3cret") || !strings.Contains(env, "WINKTEST_SECRET_B=beta") {
		t.Errorf("the passed variables are missing:\n%s", env)
	}
	if strings.Contains(env, "WINKTEST_OTHER") || strings.Contains(env, home) {
		t.Errorf("a variable the pattern does not match reached the container:\n%s", env)
	}
	git := p.run("sh", "-c", "git config --list; echo helper=$(git config --get credential.helper); "+
		"git init -q r && cd r && git commit -q --allow-empty -m x && git log --format='%an <%ae>|%cn'")
	for _, want := range []string{"user.name=Ada Lovelace", "user.email=ada@example.org", "helper=\n", "Ada Lovelace <ada@example.org>|Ada Lovelace"} {
		if !strings.Contains(git.Stdout, want) {
			t.Errorf("git in the container lacks %q:\n%s%s", want, git.Stdout, git.Stderr)
		}
	}
	for _, never := range []string{"credential", "insteadof", "sshcommand", "mirror.invalid"} {
		if strings.Contains(strings.ToLower(git.Stdout), never) {
			t.Errorf("the host's %s reached the container:\n%s", never, git.Stdout)
		}
	}
	if logs := p.logs.String(); strings.Contains(logs, "alpha-s3cret") {
		t.Error("a passed variable's value is in the server's log")
	}
}

// TestProfilesOnRootlessAndRemotePodman builds a profile on rootless Podman
// and on a remote Podman host (the setup's container runs where the
// sessions' do, with the agent copied in there) and runs a session from it.
func TestProfilesOnRootlessAndRemotePodman(t *testing.T) {
	const text = "profiles:\n  mark:\n    image: " + "IMAGE" + "\n    setup: [\"echo built-NONCE > /etc/mark && id -u > /etc/setup-uid\"]\n"
	t.Run("rootless", func(t *testing.T) {
		u := needRootless(t)
		nonce := randomHex(6)
		dir := u.dir(t)
		file := filepath.Join(dir, "profiles.yaml")
		body := strings.NewReplacer("IMAGE", testImage, "NONCE", nonce).Replace(text)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			out, _ := u.podman("images", "--filter", "label=io.wink-mcp.profile=mark", "--format", "{{.ID}}")
			for _, id := range strings.Fields(out) {
				_, _ = u.podman("rmi", "-f", id)
			}
		})
		p := start(t, startOptions{as: u, args: append([]string{"--profiles", file, "--profile", "mark"}, rootlessArgs...)})
		if out := p.run("sh", "-c", "cat /etc/mark /etc/setup-uid; id -u"); strings.Fields(out.Stdout)[0] != "built-"+nonce ||
			strings.Join(strings.Fields(out.Stdout)[1:], " ") != "0 65534" {
			t.Errorf("rootless session from the profile: %q %q; want the mark, a root setup and an unprivileged session", out.Stdout, out.Stderr)
		}
		checkRootlessHardening(t, u, p.container())
	})
	t.Run("remote", func(t *testing.T) {
		r := needRemote(t)
		file, nonce := profilesFile(t, text)
		t.Cleanup(func() {
			out, _ := r.podman("images", "--filter", "label=io.wink-mcp.profile=mark", "--format", "{{.ID}}")
			for _, id := range strings.Fields(out) {
				_, _ = r.podman("rmi", "-f", id)
			}
		})
		p := start(t, startOptions{remote: r, args: []string{"--profiles", file, "--profile", "mark", "--disk-limit", "0"}})
		if out := p.run("sh", "-c", "cat /etc/mark; id -u"); strings.Join(strings.Fields(out.Stdout), " ") != "built-"+nonce+" 65534" {
			t.Errorf("remote session from the profile: %q %q", out.Stdout, out.Stderr)
		}
		if images, _ := r.podman("images", "--filter", "label=io.wink-mcp.profile=mark", "--format", "{{.Repository}}"); !strings.Contains(images, "localhost/wink-profile") {
			t.Errorf("no profile image on the remote host: %q", images)
		}
		if left := r.named(t, "volume", p.prefix+"-setup"); len(left) > 0 {
			t.Errorf("the setup's workspace volume is left on the remote host: %v", left)
		}
	})
}

// TestProfileMounts gives a profile a host folder: its sessions see it as
// an overlay, whose changes come back like any mount's; a session that has
// not run a call may switch to it, one that has is told to start anew.
func TestProfileMounts(t *testing.T) {
	root, folder := project(t)
	file, nonce := profilesFile(t, "profiles:\n  proj-NONCE:\n    image: IMAGE\n    mounts: [\""+folder+":app\"]\n  plain-NONCE:\n    image: IMAGE\n")
	proj, plain := "proj-"+nonce, "plain-"+nonce
	p := start(t, startOptions{transport: "http", args: []string{"--profiles", file, "--allowed-root", root, "--warm", "0"}})

	a := p.sibling(nil, "")
	if r := a.useProfile(proj, false); r.Restarted {
		t.Errorf("switching before any call: %+v", r)
	}
	a.run("sh", "-c", "echo changed >> app/README.md")
	if statuses, _ := a.changeStatuses(); statuses["app/README.md"] != "modified" {
		t.Errorf("changes %v, want app/README.md modified", statuses)
	}
	if got, _ := os.ReadFile(filepath.Join(folder, "README.md")); strings.Contains(string(got), "changed") {
		t.Error("the host folder changed")
	}
	res := a.call("workspace_profile", map[string]any{"name": plain, "restart": true})
	if !res.IsError || !strings.Contains(textOf(res), "?profile="+plain) {
		t.Errorf("leaving a profile's mounts after calls: %q; want a refusal naming a new session", textOf(res))
	}

	b := p.sibling(nil, "?profile="+plain)
	if out := b.run("sh", "-c", "ls app 2>&1 || echo absent"); !strings.Contains(out.Stdout, "absent") {
		t.Errorf("a session of the profile without mounts sees app: %q", out.Stdout)
	}
	bad, _ := profilesFile(t, "profiles:\n  x:\n    image: IMAGE\n    mounts:\n      - \"/a:b:c:d\"\n")
	out, err := exec.Command(winkBin, "--profiles", bad, "--allowed-root", root, "--podman-url", "unix://"+podmanSocket).CombinedOutput()
	if !strings.Contains(string(out), "profiles.yaml:5: profile \"x\": mounts:") || err == nil {
		t.Errorf("a bad mount: %v %q; want its line named", err, out)
	}
}

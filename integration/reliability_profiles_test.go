package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// TestReliabilityProfiles tries, through the binary and real Podman, the
// pitfalls a new user met setting profiles up: ${NAME} in every field, a
// setup that needs more than the sessions' /tmp, hosts the setup's proxy
// refuses, two profiles files with a profile of one name, and a prompt
// that must name the image its session gets.
func TestReliabilityProfiles(t *testing.T) {
	t.Run("variables in every field", profileVariables)
	t.Run("setup tmp", setupTmp)
	t.Run("setup egress refusals", setupRefusals)
	t.Run("two files one profile name", twoFilesOneName)
	t.Run("the prompt's image", promptImage)
	t.Run("instant initialize", instantInitialize)
	t.Run("setup workspace bound", setupWorkspaceBound)
}

// profileVariables gives every field of a profile a ${NAME}, then changes
// one: each field gets the environment's value, $${NAME} reaches the shell
// as ${NAME}, and a changed value builds a new image.
func profileVariables(t *testing.T) {
	root, folder := project(t)
	file, nonce := profilesFile(t, `profiles:
  vars-NONCE:
    description: ${WINK_T_DESC}
    image: ${WINK_T_BASE}
    setup:
      - echo ${WINK_T_VALUE} > /etc/value && echo "$${HOME}" > /etc/shell
    env: {FROM_ENV: "${WINK_T_VALUE}-env"}
    workdir: ${WINK_T_DIR}
    limits: {memory: "${WINK_T_MEMORY}"}
    egress: {session: ["${WINK_T_HOST}"]}
    mounts: ["${WINK_T_FOLDER}:app"]
`)
	name := "vars-" + nonce
	env := func(value string) []string {
		return []string{"WINK_T_DESC=described by the environment", "WINK_T_BASE=" + pythonImage, "WINK_T_VALUE=" + value,
			"WINK_T_DIR=work", "WINK_T_MEMORY=96m", "WINK_T_HOST=pkg.example.org", "WINK_T_FOLDER=" + folder}
	}
	p := start(t, startOptions{env: env("one"), args: []string{"--profiles", file, "--profile", name, "--allowed-root", root}})
	out := p.run("sh", "-c", "cat /etc/value /etc/shell; echo $FROM_ENV; pwd; head -1 ../app/README.md; python3 -c 'print(6*7)'")
	memory, _ := podman(t, "inspect", "--format", "{{.HostConfig.Memory}}", p.container())
	refused := rawProxy(t, p, "CONNECT other.example.org:443 HTTP/1.1\r\n\r\n")
	fields := map[string]bool{
		"description": strings.Contains(p.promptText(), "described by the environment"),
		"image":       strings.Contains(out.Stdout, "\n42\n"), // python3: the variable's image, not the server's busybox
		"setup":       strings.HasPrefix(out.Stdout, "one\n"),
		"$${NAME}":    strings.Contains(out.Stdout, "\n/tmp\n"),
		"env":         strings.Contains(out.Stdout, "one-env\n"),
		"workdir":     strings.Contains(out.Stdout, "/workspace/work\n"),
		"limits":      strings.TrimSpace(memory) == "100663296",
		"egress":      strings.Contains(refused, "allowed: pkg.example.org"),
		"mounts":      strings.Contains(out.Stdout, "# proj"),
	}
	broken := 0
	for field, ok := range fields {
		if !ok {
			broken++
			t.Errorf("${NAME} in %s did not take the environment's value: %q %q %q %q", field, out.Stdout, out.Stderr, memory, refused)
		}
	}
	// The same file with another value: a new image, the older pruned
	// (once no container runs it).
	p.endSession()
	again := start(t, startOptions{env: env("two"), args: []string{"--profiles", file, "--profile", name, "--allowed-root", root}})
	changed := strings.TrimSpace(again.run("cat", "/etc/value").Stdout) == "two" && again.logs.count("profile_setup_started") == 1
	if !changed {
		broken++
		t.Errorf("after the variable changed the session sees %q (setups run: %d); want two, from a new build",
			again.run("cat", "/etc/value").Stdout, again.logs.count("profile_setup_started"))
	}
	if images := profileImagesOf(t, name); len(images) != 1 {
		t.Errorf("images %v; want the older value's pruned", images)
	}
	unset := strings.ReplaceAll(mustRead(t, file), "${WINK_T_VALUE}", "${WINK_T_UNSET_VALUE}")
	must(t, os.WriteFile(file, []byte(unset), 0o644))
	cmd := exec.Command(winkBin, "--profiles", file, "--podman-url", "unix://"+podmanSocket)
	cmd.Env = append(os.Environ(), env("one")...)
	refusedStart, err := cmd.CombinedOutput()
	want := "profiles.yaml:6: profile \"" + name + "\": setup[0]: ${WINK_T_UNSET_VALUE} is not set"
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || !strings.Contains(string(refusedStart), want) {
		broken++
		t.Errorf("an unset variable in a setup command: %v %q; want exit 2 naming %q", err, refusedStart, want)
	}
	recordPromise(promiseFigure{Class: "profiles: ${NAME} in every field of a profile (setup commands included), a changed value, an unset one",
		Tried: len(fields) + 2, Broken: broken,
		Measured: fmt.Sprintf("%d of %d fields took the environment's value; a changed value built a new image: %v; an unset one stopped the start naming file:line", len(fields)-countFalse(fields), len(fields), changed)})
}

// setupTmp runs a setup that writes 64 MiB into /tmp with a 16 MiB /tmp
// for sessions, and one that fills /tmp without end.
func setupTmp(t *testing.T) {
	file, nonce := profilesFile(t, `profiles:
  tmp-NONCE:
    image: IMAGE
    limits: {tmp: 16m}
    setup:
      - head -c 67108864 /dev/zero > /tmp/big && mkdir /tmp/.cache /workspace/.w && echo x > /tmp/.cache/x && echo x > /workspace/x && echo fits > /etc/tmp-ok
  tmpfill-NONCE:
    image: IMAGE
    limits: {setup_disk: 32m}
    setup: ["i=0; while true; do head -c 8388608 /dev/zero > /tmp/f$i; i=$((i+1)); sleep 0.05; done"]
`)
	p := start(t, startOptions{transport: "http", args: []string{"--profiles", file, "--warm", "0"}})
	broken := 0
	res := p.call("workspace_profile", map[string]any{"name": "tmp-" + nonce})
	if res.IsError {
		broken++
		t.Errorf("a setup writing 64 MiB to /tmp: %s", textOf(res))
	} else if out := p.run("cat", "/etc/tmp-ok"); strings.TrimSpace(out.Stdout) != "fits" {
		broken++
		t.Errorf("the setup's mark: %q %q", out.Stdout, out.Stderr)
	}
	if images := profileImagesOf(t, "tmp-"+nonce); len(images) == 1 {
		for _, dir := range []string{"/tmp", "/workspace"} {
			left, err := podman(t, "run", "--rm", "--network", "none", "--entrypoint", "/bin/ls", images[0], "-A", dir)
			if err != nil || strings.TrimSpace(left) != "" {
				broken++
				t.Errorf("the image keeps the setup's %s: %q %v", dir, left, err)
			}
		}
	}
	res = p.call("workspace_profile", map[string]any{"name": "tmpfill-" + nonce, "restart": true})
	if text := textOf(res); !res.IsError || !strings.Contains(text, "more than limits.setup_disk (32.0 MiB)") || !strings.Contains(text, "/tmp") {
		broken++
		t.Errorf("a setup filling /tmp: %q; want it stopped at limits.setup_disk, naming /tmp", text)
	}
	recordPromise(promiseFigure{Class: "profiles: a setup writing 64 MiB to /tmp where sessions have 16 MiB, and one filling /tmp without end",
		Tried: 2, Broken: broken,
		Measured: "the first built, its /tmp and /workspace left out of the image; the second was stopped at limits.setup_disk (32 MiB) with an error naming /tmp"})
}

// setupRefusals runs setups that reach hosts their proxy refuses: the
// error of the call, and of `wink-mcp profiles build`, names each host,
// why, and the pattern to add; the proxy's own answer, which a command
// may print, speaks of egress.setup, not of --egress, and a profile
// session's speaks of both --egress and egress.session.
func setupRefusals(t *testing.T) {
	file, nonce := profilesFile(t, `profiles:
  refused-NONCE:
    image: PY_IMAGE
    egress: {setup: ["localhost"]}
    setup:
      - curl -fsS --max-time 20 https://not-allowed.example.org/; NO_PROXY= no_proxy= curl -fsS --max-time 20 http://localhost/; curl -sS --max-time 20 http://body.example.org/; exit 3
  offline-NONCE:
    image: IMAGE
    setup: ["wget -q -O- http://example.org/"]
  sess-NONCE:
    image: PY_IMAGE
    egress: {session: ["pkg.example.org"]}
`)
	p := start(t, startOptions{transport: "http", args: []string{"--profiles", file, "--warm", "0"}})
	profile := `profile "refused-` + nonce + `"`
	want := []string{"not-allowed.example.org:443: no egress.setup pattern allows it (allowed: localhost)",
		`add "not-allowed.example.org" to egress.setup of ` + profile,
		"localhost:80: it resolves to 127.0.0.1", `add "localhost:80" to egress.setup`,
		// curl printed the proxy's answer: the setup's terms, not the server's flag.
		`wink-mcp egress proxy refused body.example.org:80: no egress.setup pattern allows it (allowed: localhost). If the setup needs it, add "body.example.org" to egress.setup of ` + profile}
	tool := textOf(p.call("workspace_profile", map[string]any{"name": "refused-" + nonce}))
	cli, _ := profilesCLI(t, file, t.TempDir(), "build", "refused-"+nonce)
	broken := 0
	for _, where := range []struct{ name, text string }{{"workspace_profile", tool}, {"profiles build", cli}} {
		for _, w := range want {
			if !strings.Contains(where.text, w) {
				broken++
				t.Errorf("%s's error lacks %q:\n%s", where.name, w, where.text)
			}
		}
		if strings.Contains(where.text, "--egress ") {
			broken++
			t.Errorf("%s's error speaks of --egress, which a setup does not use:\n%s", where.name, where.text)
		}
	}
	session := p.sibling(nil, "?profile=sess-"+nonce)
	answer := rawProxy(t, session, "CONNECT other.example.org:443 HTTP/1.1\r\n\r\n")
	if !strings.Contains(answer, `Ask the user to start wink-mcp with --egress other.example.org, or to add "other.example.org" to egress.session of profile "sess-`+nonce+`"`) {
		broken++
		t.Errorf("a profile session's refusal: %q; want it to name --egress and the profile's egress.session", answer)
	}
	offline := textOf(p.call("workspace_profile", map[string]any{"name": "offline-" + nonce}))
	if !strings.Contains(offline, "the setup has none, because egress.setup of profile \"offline-"+nonce+"\"") {
		broken++
		t.Errorf("a setup without egress.setup: %q; want it to say it has no network", offline)
	}
	recordPromise(promiseFigure{Class: "profiles: setup commands reaching a host egress.setup does not name and one resolving to loopback, a setup with no egress.setup, a profile session's refusal",
		Tried: 2*len(want) + 4, Broken: broken,
		Measured: "the tool's error and `profiles build`'s output name each refused host, why (no pattern, a loopback address) and the pattern to add, from the proxy's own refusals, and never --egress; the proxy's answer a command printed names egress.setup; a setup without egress.setup says it has no network; a profile session's refusal names --egress and egress.session"})
}

// twoFilesOneName builds a profile of one name from two files, with two
// servers at once and then in turns: each keeps its image.
func twoFilesOneName(t *testing.T) {
	nonce := randomHex(6)
	name := "same-" + nonce
	t.Cleanup(func() { removeProfileImages(t, nonce) })
	files := map[string]string{}
	for _, which := range []string{"A", "B"} {
		files[which] = filepath.Join(t.TempDir(), "profiles.yaml")
		must(t, os.WriteFile(files[which], []byte("profiles:\n  "+name+":\n    image: "+testImage+"\n    setup: [\"echo "+which+" > /etc/which\"]\n"), 0o644))
	}
	cache := t.TempDir() // one machine's servers share their cache
	serve := func(which string) *proc {
		return start(t, startOptions{cache: cache, args: []string{"--profiles", files[which], "--profile", name, "--lazy"}})
	}
	which := func(p *proc) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := p.client.CallTool(ctx, shellRequest("cat", "/etc/which"))
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(textOf(res)), nil
	}
	check := func(round string, p *proc, want string, setups int) bool {
		got, err := which(p)
		if err != nil || !strings.Contains(got, want) || p.logs.count("profile_setup_started") != setups {
			t.Errorf("%s: file %s's session read %q (%v) after %d setups; want %s after %d", round, want, got, err, p.logs.count("profile_setup_started"), want, setups)
			return false
		}
		return true
	}
	a, b := serve("A"), serve("B")
	var wg sync.WaitGroup
	held := make([]bool, 2)
	for i, c := range []struct {
		p    *proc
		want string
	}{{a, "A"}, {b, "B"}} {
		wg.Go(func() { held[i] = check("at once", c.p, c.want, 1) })
	}
	wg.Wait()
	// In turns, each server gone before the next starts: no container
	// holds the other file's image any more.
	a.endSession()
	b.endSession()
	for i, w := range []string{"A", "B", "A", "B"} {
		p := serve(w)
		held = append(held, check(fmt.Sprintf("in turns, round %d", i+1), p, w, 0))
		p.endSession()
	}
	tried, broken := len(held), 0
	for _, ok := range held {
		if !ok {
			broken++
		}
	}
	if images := profileImagesOf(t, name); len(images) != 2 {
		t.Errorf("images of %s: %v; want one per file", name, images)
	}
	out, err := profilesCLI(t, files["A"], cache, "prune")
	if images := profileImagesOf(t, name); err != nil || len(images) != 2 || !strings.Contains(out, "kept ") || !strings.Contains(out, files["B"]) {
		broken++
		t.Errorf("profiles prune with file A: %v\n%s\nimages left %v; want B's kept and named", err, out, images)
	}
	recordPromise(promiseFigure{Class: "profiles: one profile name in two files, two servers building at once, then four servers in turns, then a prune",
		Tried: tried + 1, Broken: broken,
		Measured: fmt.Sprintf("%d of %d sessions ran their own file's image, each file's built once; the prune kept the other file's", tried-broken, tried)})
}

// promptImage asks the prompt, and reads the instructions, of sessions
// that have no container yet: each names the one image its session gets.
func promptImage(t *testing.T) {
	file, nonce := profilesFile(t, `profiles:
  p-NONCE:
    image: IMAGE
    setup: ["echo p > /etc/p"]
  q-NONCE:
    image: IMAGE
    setup: ["echo q > /etc/q"]
`)
	type seen struct{ what, text string }
	var texts []seen
	plain := start(t, startOptions{image: "", args: []string{"--image", "", "--lazy"}})
	texts = append(texts, seen{"no --image: prompt", plain.promptText()}, seen{"no --image: instructions", plain.instructions})
	byProfile := start(t, startOptions{args: []string{"--profiles", file, "--profile", "p-" + nonce, "--lazy"}})
	texts = append(texts, seen{"--profile: prompt", byProfile.promptText()}, seen{"--profile: instructions", byProfile.instructions})
	server := start(t, startOptions{transport: "http", args: []string{"--profiles", file, "--lazy", "--warm", "0"}})
	q := server.sibling(nil, "?profile=q-"+nonce)
	texts = append(texts, seen{"?profile=: prompt", q.promptText()}, seen{"?profile=: instructions", q.instructions})
	// An initialize never waits for the Podman service: unless this process
	// has found the image already, the instructions name the configured
	// choice, the next one if the service lacks it, and say the profile's
	// setup builds from it, still one image.
	fallback := func(profile string) string {
		return "| image | `" + testImage + "` (profile `" + profile + "`'s setup builds"
	}
	want := map[string][][]string{
		"no --image": {{"| image | `" + workspace.LocalImage + "` |"},
			{"| image | `" + workspace.LocalImage + "` (if the Podman service has it; else `" + workspace.DefaultImage + "`, pulled if missing) |"}},
		"--profile": {{"| image | `localhost/wink-profile:p-" + nonce + "-", "built from `" + testImage + "`", "| profile | `p-" + nonce + "` |"},
			{fallback("p-" + nonce), "| profile | `p-" + nonce + "` |"}},
		"?profile=":   {{"| image | `localhost/wink-profile:q-" + nonce + "-", "| profile | `q-" + nonce + "` |"}, {fallback("q-" + nonce), "| profile | `q-" + nonce + "` |"}},
		"after build": {{"| image | `localhost/wink-profile:p-" + nonce + "-", "| profile | `p-" + nonce + "` |"}},
	}
	byProfile.run("true")
	texts = append(texts, seen{"after build: prompt", byProfile.promptText()})
	broken := 0
	for _, s := range texts {
		kind, source, _ := strings.Cut(s.what, ": ")
		alternatives := want[kind]
		if source == "prompt" {
			alternatives = alternatives[:1] // a prompt waits for the service
		}
		row := imageRow(s.text)
		ok := false
		for _, all := range alternatives {
			found := !strings.Contains(row, " or ") && !(kind == "after build" && strings.Contains(row, "("))
			for _, w := range all {
				found = found && strings.Contains(s.text, w)
			}
			ok = ok || found
		}
		if !ok {
			broken++
			t.Errorf("%s: image row %q; want one of %q:\n%s", s.what, row, alternatives, s.text)
		}
	}
	recordPromise(promiseFigure{Class: "prompt: the image a session gets, asked before its container exists (no --image, --profile, ?profile=) and after its build",
		Tried: len(texts), Broken: broken,
		Measured: fmt.Sprintf("%d of %d prompts and instructions named one image, the session's, and its profile", len(texts)-broken, len(texts))})
}

// imageRow is the image row of a workspace prompt's table.
func imageRow(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "| image |") {
			return line
		}
	}
	return ""
}

func countFalse(m map[string]bool) int {
	n := 0
	for _, ok := range m {
		if !ok {
			n++
		}
	}
	return n
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

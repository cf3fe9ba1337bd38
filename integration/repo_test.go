package integration

import (
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitServer serves the bare repositories under a new folder over smart
// HTTP (git's own http-backend) on an HTTPS port of this machine's
// loopback, answering only requests that carry the bearer token.
func gitServer(t *testing.T) (root string, srv *headerServer, caPEM []byte) {
	t.Helper()
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	root = t.TempDir()
	caPEM, cert := testCA(t)
	h := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv = serveHeaders(t, cert, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+credSecret {
			w.Header().Set("WWW-Authenticate", `Bearer realm="git"`)
			http.Error(w, "a token is needed", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	return root, srv, caPEM
}

// bareRepo makes the bare repository NAME.git under root with two
// commits, the first tagged v1.
func bareRepo(t *testing.T, root, name string) {
	t.Helper()
	work := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	must(t, os.WriteFile(filepath.Join(work, "version.txt"), []byte("one\n"), 0o644))
	git("add", ".")
	git("commit", "-qm", "one")
	git("tag", "v1")
	must(t, os.WriteFile(filepath.Join(work, "version.txt"), []byte("two\n"), 0o644))
	git("commit", "-qam", "two")
	git("clone", "-q", "--bare", work, filepath.Join(root, name+".git"))
}

// TestRepoClonedThroughTheProxy: --repo clones a private repository
// into the workspace as the session's first step, through the egress
// proxy, which adds the credentials file's token (the container never
// holds it); the ref is checked out; the model's work on it shows in
// git status and diff; a profile's repo is cloned alike. Without the credential the first call
// says why the clone failed; a hostile ref never starts the server.
func TestRepoClonedThroughTheProxy(t *testing.T) {
	root, srv, caPEM := gitServer(t)
	bareRepo(t, root, "tool")
	bundle, creds := writeTrustFiles(t, t.TempDir(), caPEM, srv.port, "")
	host := "localhost:" + srv.port
	p := start(t, startOptions{image: pythonImage, env: []string{"WINK_TEST_API_TOKEN=" + credSecret},
		args: []string{"--warm", "0", "--credentials", creds, "--ca-bundle", bundle, "--egress", host,
			"--repo", "https://" + host + "/tool.git#v1"}})
	out := p.run("sh", "-c", "cat tool/version.txt && git -C tool log --format=%s && git -C tool remote get-url origin")
	if out.ExitCode != 0 || out.Stdout != "one\none\nhttps://"+host+"/tool.git\n" {
		t.Fatalf("the clone at v1: %+v", out)
	}
	if out := p.run("sh", "-c", "grep -rl "+credSecret+" tool/.git /proc/self/environ; env | grep -c "+credSecret); strings.Contains(out.Stdout, "tool/") || strings.TrimSpace(out.Stdout) != "0" {
		t.Fatalf("the token reached the container: %+v", out)
	}
	if res := p.call("write_file", map[string]any{"file_path": "tool/version.txt", "content": "mine\n"}); res.IsError {
		t.Fatalf("write_file: %s", textOf(res))
	}
	// The clone is the workspace's own files, not a host folder:
	// workspace_changes and the export do not cover it; git does.
	if out := p.run("sh", "-c", "git -C tool status --short && git -C tool diff"); !strings.Contains(out.Stdout, " M version.txt\n") || !strings.Contains(out.Stdout, "-one\n+mine") {
		t.Fatalf("git status and diff: %+v", out)
	}
	var fetched bool
	for _, r := range srv.requests() {
		fetched = fetched || strings.HasPrefix(r, "/tool.git/info/refs Bearer "+credSecret)
	}
	if !fetched {
		t.Fatalf("the server saw no authorised clone: %v", srv.requests())
	}

	// A profile's repo, its host in the profile's own egress.session: the
	// remote's default branch.
	file := filepath.Join(t.TempDir(), "profiles.yaml")
	must(t, os.WriteFile(file, []byte("profiles:\n  tool:\n    repo: https://"+host+"/tool.git\n    egress:\n      session: [\""+host+"\"]\n"), 0o644))
	pr := start(t, startOptions{image: pythonImage, env: []string{"WINK_TEST_API_TOKEN=" + credSecret},
		args: []string{"--warm", "0", "--credentials", creds, "--ca-bundle", bundle, "--profiles", file, "--profile", "tool", "--no-builtin-profiles"}})
	if out := pr.run("cat", "tool/version.txt"); out.ExitCode != 0 || out.Stdout != "two\n" {
		t.Fatalf("the profile's clone: %+v", out)
	}

	// Without the credential: the first call says the clone failed and why.
	q := start(t, startOptions{image: pythonImage, args: []string{"--warm", "0", "--ca-bundle", bundle, "--egress", host,
		"--repo", "https://" + host + "/tool.git"}})
	res := q.call("podman_shell", map[string]any{"command": []string{"true"}})
	if text := textOf(res); !res.IsError || !strings.Contains(text, "cloning --repo https://"+host+"/tool.git into /workspace/tool") || !strings.Contains(text, "--credentials") {
		t.Fatalf("a clone without its token: %s", text)
	}

	// A ref that would be a shell command, or a git option, never starts.
	for _, spec := range []string{"https://" + host + "/tool.git#$(touch${IFS}/tmp/wink-pwned)", "https://" + host + "/tool.git#--upload-pack=touch", "ext::sh -c touch /tmp/wink-pwned"} {
		cmd := exec.Command(winkBin, "--egress", host, "--repo", spec, "--podman-url", "unix://"+podmanSocket)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 || !strings.Contains(string(out), "--repo") {
			t.Errorf("--repo %q: exit %d, %s", spec, code, out)
		}
	}
}

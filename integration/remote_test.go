package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// remoteHost is the second Podman host `make setup` makes: a Podman
// service in its own network and mount namespaces, which does not see this
// machine's files, reached over ssh with a key.
type remoteHost struct {
	url, key string
}

var remote struct {
	once sync.Once
	host *remoteHost
	why  string
}

// needRemote returns the remote host, or skips the test without one (fails
// it when CI is set: a broken set-up must not pass as green).
func needRemote(t *testing.T) *remoteHost {
	t.Helper()
	remote.once.Do(func() {
		r := &remoteHost{
			url: envOr("WINK_REMOTE_URL", "ssh://root@10.231.0.2:22/run/wink-remote/podman.sock"),
			key: envOr("WINK_REMOTE_KEY", "/var/lib/wink-remote/id_ed25519"),
		}
		if out, err := r.podman("image", "exists", testImage); err != nil {
			remote.why = "the remote Podman host does not answer at " + r.url + " or lacks " + testImage + ": " + err.Error() + " " + out
			return
		}
		remote.host = r
	})
	if remote.host == nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the remote Podman host is not usable: %s; run `make setup`", remote.why)
		}
		t.Skipf("the remote Podman host is not usable (%s); run `make setup`", remote.why)
	}
	return remote.host
}

// podman runs the podman CLI against the remote service.
func (r *remoteHost) podman(args ...string) (string, error) {
	out, err := exec.Command("podman", append([]string{"--url", r.url, "--identity", r.key}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// named lists the remote containers or volumes whose names start with prefix-.
func (r *remoteHost) named(t *testing.T, kind, prefix string) []string {
	t.Helper()
	args := []string{"ps", "-a", "--filter", "name=^" + prefix + "-", "--format", "{{.Names}}"}
	if kind == "volume" {
		args = []string{"volume", "ls", "--filter", "name=^" + prefix + "-", "--format", "{{.Name}}"}
	}
	out, err := r.podman(args...)
	if err != nil {
		t.Fatalf("podman %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.Fields(out)
}

func (r *remoteHost) removeAll(t *testing.T, prefix string) {
	for _, name := range r.named(t, "container", prefix) {
		_, _ = r.podman("rm", "-f", "-t", "0", name)
	}
	for _, name := range r.named(t, "volume", prefix) {
		_, _ = r.podman("volume", "rm", "-f", name)
	}
}

// A Podman host reached over ssh that cannot see this machine's files
// serves every tool on every transport: the agent is copied into an image
// there, /workspace is a volume there, nothing of this machine is mounted
// into the container, and ending the session removes its container and its
// volume.
func TestRemotePodman(t *testing.T) {
	r := needRemote(t)
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr, remote: r, args: []string{"--disk-limit", "0", "--warm", "0"}})
		fileToolsScenario(t, p)
		name := p.container()
		out, err := r.podman("inspect", "--format",
			"{{.ImageName}} {{range .Mounts}}{{.Type}}:{{.Name}}:{{.Destination}} {{end}}{{.HostConfig.NetworkMode}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}}", name)
		if err != nil {
			t.Fatalf("podman inspect: %v: %s", err, out)
		}
		fields := strings.Fields(out)
		if !strings.HasPrefix(fields[0], "localhost/wink-agent:") {
			t.Errorf("the container's image is %s, want one made with the agent copied in", fields[0])
		}
		if !strings.Contains(out, "volume:"+name+":/workspace") || strings.Contains(out, "bind:") {
			t.Errorf("mounts %q: want the session's volume at /workspace and no bind mount", out)
		}
		if !strings.HasSuffix(out, "none 1073741824 256") {
			t.Errorf("network, memory and pids %q, want none 1073741824 256", out)
		}
		if left, _ := filepath.Glob(filepath.Join(p.cache, "instances", "*", "sessions", "*", "workspace")); len(left) > 0 {
			t.Errorf("session files on this machine: %v", left)
		}
		p.endSession()
		gone := func() bool { return len(r.named(t, "container", p.prefix))+len(r.named(t, "volume", p.prefix)) == 0 }
		if tr == "stdio" {
			if !gone() {
				t.Errorf("left on the remote host: containers %v, volumes %v", r.named(t, "container", p.prefix), r.named(t, "volume", p.prefix))
			}
			return
		}
		waitUntil(t, 30*time.Second, "the session's container and volume to go", gone)
	})
}

// doctor, pointed at the remote host, tries a real container there and
// says that the disk limit is not enforced.
func TestRemotePodmanDoctor(t *testing.T) {
	r := needRemote(t)
	out, code := doctor(t, "--image", testImage, "--podman-url", r.url, "--podman-identity", r.key, "--name-prefix", "wt"+randomHex(4))
	if code != 0 {
		t.Fatalf("doctor against the remote host exited %d:\n%s", code, out)
	}
	for _, want := range []string{"a volume on the Podman host", "started in", "rides the engine's exec streams (no socket"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, out)
		}
	}
}

// A copy mount on a Podman host that cannot see the folder: its files are
// uploaded, owned by the container user; workspace_changes and the patch
// exported when the session ends read the session's copy brought back from
// that host; the folder itself is never touched.
func TestRemotePodmanCopyMountAndExport(t *testing.T) {
	r := needRemote(t)
	root := t.TempDir()
	folder := filepath.Join(root, "proj")
	must(t, os.MkdirAll(filepath.Join(folder, "sub"), 0o755))
	for name, content := range map[string]string{"a.txt": "one\n", "gone.txt": "bye\n", "sub/keep.txt": "keep\n"} {
		must(t, os.WriteFile(filepath.Join(folder, name), []byte(content), 0o644))
	}
	before := hostManifest(t, folder)
	exportDir := t.TempDir()
	p := start(t, startOptions{remote: r, args: []string{"--disk-limit", "0", "--warm", "0",
		"--allowed-root", root, "--mount", folder + ":proj:copy", "--export-on-exit", exportDir}})
	if ls := p.run("sh", "-c", "stat -c '%u %n' proj proj/a.txt proj/sub/keep.txt"); ls.Stdout != "65534 proj\n65534 proj/a.txt\n65534 proj/sub/keep.txt\n" {
		t.Errorf("the uploaded copy: %q %q", ls.Stdout, ls.Stderr)
	}
	if res := p.run("sh", "-c", "echo two >> proj/a.txt && echo new > proj/b.txt && rm proj/gone.txt && mkdir -p proj/deep && echo x > proj/deep/c"); res.ExitCode != 0 {
		t.Fatalf("editing the copy: %+v", res)
	}
	got, _ := p.changeStatuses()
	want := map[string]string{"proj/a.txt": "modified", "proj/b.txt": "created", "proj/gone.txt": "deleted", "proj/deep/c": "created"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("workspace_changes %v, want %v", got, want)
	}
	p.endSession() // over stdio: the server has exported and exited
	patches, _ := filepath.Glob(filepath.Join(exportDir, "*", "proj.patch"))
	if len(patches) != 1 {
		t.Fatalf("exported %v, want one proj.patch\n%s", patches, p.logs.String())
	}
	patch, err := os.ReadFile(patches[0])
	must(t, err)
	for _, part := range []string{"+two", "b.txt", "deep/c", "deleted file mode", "gone.txt"} {
		if !strings.Contains(string(patch), part) {
			t.Errorf("the patch lacks %q:\n%s", part, patch)
		}
	}
	if after := hostManifest(t, folder); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the host folder changed: %v, was %v", after, before)
	}
	if left := append(r.named(t, "container", p.prefix), r.named(t, "volume", p.prefix)...); len(left) > 0 {
		t.Errorf("left on the remote host: %v", left)
	}
}

// sharedDir is a folder the remote host sees at the same path, as a
// podman machine sees its user's home: `make setup` hides /tmp, /root,
// /home, /work and /var/cache from that host, not /srv.
const sharedDir = "/srv/wink-shared"

// On a Podman host that sees a folder at the same path, the folder may be
// an overlay or a read-only mount: edits reach the session's overlay (kept
// in the cache directory, shared too) and its exported patch, the folder
// stays as it was, and the read-only mount refuses writes.
func TestRemotePodmanOverlayOfASharedFolder(t *testing.T) {
	r := needRemote(t)
	must(t, os.MkdirAll(sharedDir, 0o755))
	base, err := os.MkdirTemp(sharedDir, "test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	folder, ref := filepath.Join(base, "proj"), filepath.Join(base, "ref")
	for name, content := range map[string]string{"proj/a.txt": "one\n", "proj/gone.txt": "bye\n", "ref/r.txt": "reference\n"} {
		p := filepath.Join(base, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	for _, p := range []string{folder, filepath.Join(folder, "a.txt"), filepath.Join(folder, "gone.txt")} {
		must(t, os.Lchown(p, hostUID, hostUID)) // the session edits the folder as its owner
	}
	before := fmt.Sprint(hostManifest(t, folder), hostManifest(t, ref))
	exportDir := t.TempDir()
	p := start(t, startOptions{remote: r, cache: filepath.Join(base, "cache"), args: []string{"--disk-limit", "0", "--warm", "0",
		"--podman-shared-path", sharedDir, "--allowed-root", base,
		"--mount", folder + ":proj", "--mount", ref + ":ref:ro", "--export-on-exit", exportDir}})
	if res := p.run("sh", "-c", "echo two >> proj/a.txt && echo new > proj/b.txt && rm proj/gone.txt"); res.ExitCode != 0 {
		t.Fatalf("editing the overlay: %+v", res)
	}
	if res := p.call("write_file", map[string]any{"file_path": "ref/r.txt", "content": "overwritten"}); !res.IsError {
		t.Error("the read-only mount took a write")
	}
	got, _ := p.changeStatuses()
	if want := map[string]string{"proj/a.txt": "modified", "proj/b.txt": "created", "proj/gone.txt": "deleted"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("workspace_changes %v, want %v", got, want)
	}
	p.endSession()
	patches, _ := filepath.Glob(filepath.Join(exportDir, "*", "proj.patch"))
	if len(patches) != 1 {
		t.Fatalf("exported %v, want one proj.patch\n%s", patches, p.logs.String())
	}
	patch, err := os.ReadFile(patches[0])
	must(t, err)
	for _, part := range []string{"+two", "b.txt", "gone.txt"} {
		if !strings.Contains(string(patch), part) {
			t.Errorf("the patch lacks %q:\n%s", part, patch)
		}
	}
	if after := fmt.Sprint(hostManifest(t, folder), hostManifest(t, ref)); after != before {
		t.Errorf("the host folders changed: %s, were %s", after, before)
	}
}

// Egress and port previews ride the exec channel, which a Podman host
// reached over ssh carries like a local one: a registry is reached through
// the proxy (this machine resolves and dials it), a refusal names the host,
// and a server in the remote container is fetched through its URL here.
func TestRemotePodmanEgressAndPorts(t *testing.T) {
	r := needRemote(t)
	reg := machineRegistries(t)
	p := start(t, startOptions{remote: r, image: pythonImage, args: []string{"--disk-limit", "0", "--warm", "0", "--egress", reg.npm.Hostname()}})
	caBundle(t, p)
	out := py(t, p, fmt.Sprintf(`import urllib.request
print(urllib.request.urlopen(%q).status)
`, reg.npm.JoinPath("left-pad").String()))
	if strings.TrimSpace(out) != "200" {
		t.Errorf("the registry from the remote container: %q", out)
	}
	if out := rawProxy(t, p, "CONNECT example.org:443 HTTP/1.1\r\n\r\n"); !strings.Contains(out, "403") || !strings.Contains(out, "--egress example.org") {
		t.Errorf("a refusal from the remote container: %q", out)
	}
	if rec := p.waitLog(10*time.Second, "tunnel opened", nil); rec["path"] != "exec attach" {
		t.Errorf("the remote tunnel's log record: %v, want path exec attach", rec)
	}
	url := openPort(t, p, 8000)
	if res := p.call("write_file", map[string]any{"file_path": "site/index.html", "content": "from the remote host\n"}); res.IsError {
		t.Fatal(textOf(res))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		p.call("podman_shell", map[string]any{"command": []string{"timeout", "8", "python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"}, "timeout_seconds": 60})
	})
	var got string
	waitUntil(t, 8*time.Second, "the remote workspace's server through the URL", func() bool {
		var status int
		status, got = fetch(url)
		return status == 200
	})
	if got != "from the remote host\n" {
		t.Errorf("through the URL: %q", got)
	}
	wg.Wait()
}

// TestRemotePodmanCheckpoints saves and restores a workspace whose files
// are a volume on a Podman host reached over ssh: the agent reads and
// writes them there, the store stays on this machine. Kept workspaces are
// refused with the reason.
func TestRemotePodmanCheckpoints(t *testing.T) {
	r := needRemote(t)
	p := start(t, startOptions{transport: "http", remote: r, args: []string{"--disk-limit", "0", "--warm", "0"}})
	if res := p.run("sh", "-c", plantWorkspace); res.ExitCode != 0 {
		t.Fatalf("planting: %s", res.Stderr)
	}
	want := p.listing()
	decodeStructured(t, p.call("workspace_checkpoint", map[string]any{"message": "remote"}), &tools.WorkspaceCheckpointResult{})
	p.run("sh", "-c", "chmod -R u+w .; rm -rf ./* ./.wh*; echo gone > only-after")
	var res tools.WorkspaceRestoreResult
	decodeStructured(t, p.call("workspace_restore", map[string]any{"checkpoint": "c1"}), &res)
	if got := p.listing(); got != want {
		t.Errorf("after the restore on the remote host:\n%s", lineDiff(want, got))
	}
	if stores, _ := filepath.Glob(filepath.Join(p.cache, "instances", "*", "stores", "*", "checkpoints", "c1.json")); len(stores) != 1 {
		t.Errorf("the checkpoint is not in this machine's cache: %v", stores)
	}
	kept := p.sibling(nil, "?workspace=remote-kept")
	if res := kept.call("ls", nil); !res.IsError || !strings.Contains(textOf(res), "files-on-podman-host") {
		t.Errorf("a kept workspace on a remote host = %s", textOf(res))
	}
}

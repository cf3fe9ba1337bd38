package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine/kubernetes"
)

// kubeArgs are the flags of a Kubernetes engine that starts.
var kubeArgs = []string{"--engine", "kubernetes", "--kubernetes-agent-image", "localhost/wink-agent:1", "--cache-dir", "/tmp/wink-test"}

func TestKubernetesEngineFlags(t *testing.T) {
	t.Parallel()
	cfg, opts, err := parseServeFlags(append(kubeArgs, "--namespace", "wink", "--kubernetes-runtime-class", "gvisor",
		"--kubernetes-workspace-volume", "claim", "--kubernetes-storage-class", "fast-ssd"),
		env(map[string]string{"WINK_KUBECONFIG": "/etc/kube.conf", "WINK_ALLOW_UNENFORCED_NETWORK_POLICY": "true"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := engineOptions{name: engineKubernetes, kubeconfig: "/etc/kube.conf", namespace: "wink", agentImage: "localhost/wink-agent:1", runtimeClass: "gvisor",
		workspaceVolume: volumeClaim, storageClass: "fast-ssd", allowUnenforcedNetworkPolicy: true}
	if opts.engine != want || !cfg.Workspace.FilesOnEngineHost {
		t.Errorf("engine options %+v, files on the engine's host %v; want %+v, true", opts.engine, cfg.Workspace.FilesOnEngineHost, want)
	}
}

// TestKubernetesEngineRefusesAtStartUp checks that what the Kubernetes
// engine cannot do yet stops the start with a message naming the flag,
// rather than failing mid-call, and that its flags need it.
func TestKubernetesEngineRefusesAtStartUp(t *testing.T) {
	t.Parallel()
	profiles := t.TempDir() + "/profiles.yaml"
	if err := os.WriteFile(profiles, []byte("profiles:\n  tools:\n    setup: ['apt-get install -y jq']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"setup commands", append(kubeArgs, "--profiles", profiles), `profile "tools" has setup commands, which --engine kubernetes does not run: ` +
			"build and push its image with `wink-mcp profiles build --push REPOSITORY"},
		{"repository with a tag", append(kubeArgs, "--profiles", profiles, "--kubernetes-profile-repository", "localhost:5000/p:1"), "--kubernetes-profile-repository \"localhost:5000/p:1\": give the repository without a tag"},
		{"repository without a host", append(kubeArgs, "--kubernetes-profile-repository", "profiles"), "give the registry's host too"},
		{"profile repository with podman", []string{"--kubernetes-profile-repository", "localhost:5000/p"}, "--kubernetes-profile-repository is a setting of --engine kubernetes"},
		{"unknown engine", []string{"--engine", "docker"}, `--engine "docker": want podman or kubernetes`},
		{"no agent image", []string{"--engine", "kubernetes"}, "--kubernetes-agent-image is required"},
		{"bad namespace", append(kubeArgs, "--namespace", "Wink_1"), `--namespace "Wink_1"`},
		{"bad runtime class", append(kubeArgs, "--kubernetes-runtime-class", "g visor"), `--kubernetes-runtime-class "g visor"`},
		{"bad workspace volume", append(kubeArgs, "--kubernetes-workspace-volume", "pvc"), `--kubernetes-workspace-volume "pvc": want emptydir or claim`},
		{"claim without a size", append(kubeArgs, "--kubernetes-workspace-volume", "claim", "--disk-limit", "0"), "--kubernetes-workspace-volume claim needs --disk-limit above 0"},
		{"bad storage class", append(kubeArgs, "--kubernetes-storage-class", "Fast_SSD"), `--kubernetes-storage-class "Fast_SSD"`},
		{"storage class with podman", []string{"--kubernetes-storage-class", "fast"}, "--kubernetes-storage-class is a setting of --engine kubernetes"},
		{"mount", append(kubeArgs, "--mount", t.TempDir()), "--mount is not available with --engine kubernetes yet"},
		{"mount roots", append(kubeArgs, "--mount-roots", "--allowed-root", t.TempDir()), "--mount-roots is not available"},
		{"keep session dirs", append(kubeArgs, "--keep-session-dirs"), "--keep-session-dirs is not available"},
		{"podman url", append(kubeArgs, "--podman-url", "unix:///x.sock"), "--podman-url or --podman-connection is not available"},
		{"namespace with podman", []string{"--namespace", "wink"}, "--namespace is a setting of --engine kubernetes"},
		{"agent image with podman", []string{"--kubernetes-agent-image", "a:1"}, "--kubernetes-agent-image is a setting of --engine kubernetes"},
		{"unenforced policy with podman", []string{"--allow-unenforced-network-policy"}, "--allow-unenforced-network-policy is a setting of --engine kubernetes"},
		{"checkpoint dir with podman", []string{"--checkpoint-dir", "/shared"}, "--checkpoint-dir is a setting of --engine kubernetes"},
		{"relative checkpoint dir", append(kubeArgs, "--checkpoint-dir", "shared"), `--checkpoint-dir "shared" must be an absolute path`},
		{"artefact cache", append(kubeArgs, "--egress", "proxy.example", "--egress-cache", "proxy.example"), "--credentials, --egress-cache, --ca-bundle and a profile's ca_bundle need"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := parseServeFlags(tc.args, env(nil), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseServeFlags(%q) = %v; want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestDoctorSaysWhetherTheAPIServerAnswers runs doctor with the
// Kubernetes engine on a kubeconfig that is not there: the service line
// fails and says how to point wink-mcp at a cluster.
func TestDoctorSaysWhetherTheAPIServerAnswers(t *testing.T) {
	t.Parallel()
	kubeconfig := t.TempDir() + "/no.kubeconfig"
	var out strings.Builder
	args := append([]string{"doctor", "--kubeconfig", kubeconfig, "--cache-dir", t.TempDir(), "--image", "localhost/test-image:1"}, kubeArgs[:4]...)
	if code := run(args, strings.NewReader(""), &out, io.Discard); code != 1 {
		t.Errorf("doctor without a cluster exited %d, want 1:\n%s", code, out.String())
	}
	for _, want := range []string{
		"FAIL  service       cannot reach the Kubernetes API server: loading the kubeconfig: stat " + kubeconfig,
		"                    fix: " + kubernetes.ServiceRemedy,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestInstallAgentCopiesThisBinary(t *testing.T) {
	t.Parallel()
	dest := t.TempDir() + "/wink-mcp"
	var stderr strings.Builder
	if code := run([]string{"install-agent", dest}, strings.NewReader(""), io.Discard, &stderr); code != 0 {
		t.Fatalf("install-agent exited %d: %s", code, stderr.String())
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(self)
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the copy differs from this binary (%d bytes, want %d): %v", len(got), len(want), err)
	}
	if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o555 {
		t.Errorf("the copy has mode %v, want 0555", fi.Mode().Perm())
	}
	if code := run([]string{"install-agent"}, strings.NewReader(""), io.Discard, io.Discard); code != 2 {
		t.Errorf("install-agent without a file exited %d, want 2", code)
	}
}

// TestKubernetesEngineRunsPushedProfiles checks that a profile with setup
// commands is accepted with --kubernetes-profile-repository, which the
// workspace's configuration then carries.
func TestKubernetesEngineRunsPushedProfiles(t *testing.T) {
	t.Parallel()
	profiles := t.TempDir() + "/profiles.yaml"
	if err := os.WriteFile(profiles, []byte("profiles:\n  tools:\n    setup: ['apt-get install -y jq']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(kubeArgs, "--profiles", profiles, "--kubernetes-profile-repository", "registry.example:5000/wink-profiles")
	cfg, _, err := parseServeFlags(args, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Workspace.PushedProfileRepository; got != "registry.example:5000/wink-profiles" {
		t.Errorf("PushedProfileRepository = %q", got)
	}
}

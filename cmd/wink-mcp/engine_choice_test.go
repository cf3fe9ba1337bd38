package main

import (
	"io"
	"strings"
	"testing"
)

// kubeArgs are the flags of a Kubernetes engine that starts.
var kubeArgs = []string{"--engine", "kubernetes", "--kubernetes-agent-image", "localhost/wink-agent:1", "--cache-dir", "/tmp/wink-test"}

func TestKubernetesEngineFlags(t *testing.T) {
	t.Parallel()
	cfg, opts, err := parseServeFlags(append(kubeArgs, "--namespace", "wink", "--kubernetes-runtime-class", "gvisor"),
		env(map[string]string{"WINK_KUBECONFIG": "/etc/kube.conf"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := engineOptions{name: engineKubernetes, kubeconfig: "/etc/kube.conf", namespace: "wink", agentImage: "localhost/wink-agent:1", runtimeClass: "gvisor"}
	if opts.engine != want || !cfg.Workspace.FilesOnEngineHost {
		t.Errorf("engine options %+v, files on the engine's host %v; want %+v, true", opts.engine, cfg.Workspace.FilesOnEngineHost, want)
	}
}

// TestKubernetesEngineRefusesAtStartUp checks that what the Kubernetes
// engine cannot do yet stops the start with a message naming the flag,
// rather than failing mid-call, and that its flags need it.
func TestKubernetesEngineRefusesAtStartUp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown engine", []string{"--engine", "docker"}, `--engine "docker": want podman or kubernetes`},
		{"no agent image", []string{"--engine", "kubernetes"}, "--kubernetes-agent-image is required"},
		{"bad namespace", append(kubeArgs, "--namespace", "Wink_1"), `--namespace "Wink_1"`},
		{"bad runtime class", append(kubeArgs, "--kubernetes-runtime-class", "g visor"), `--kubernetes-runtime-class "g visor"`},
		{"mount", append(kubeArgs, "--mount", t.TempDir()), "--mount is not available with --engine kubernetes yet"},
		{"mount roots", append(kubeArgs, "--mount-roots", "--allowed-root", t.TempDir()), "--mount-roots is not available"},
		{"kept workspace", append(kubeArgs, "--workspace", "w1"), "--workspace (a kept workspace) is not available"},
		{"keep session dirs", append(kubeArgs, "--keep-session-dirs"), "--keep-session-dirs is not available"},
		{"podman url", append(kubeArgs, "--podman-url", "unix:///x.sock"), "--podman-url or --podman-connection is not available"},
		{"namespace with podman", []string{"--namespace", "wink"}, "--namespace is a setting of --engine kubernetes"},
		{"agent image with podman", []string{"--kubernetes-agent-image", "a:1"}, "--kubernetes-agent-image is a setting of --engine kubernetes"},
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

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// kubernetesCluster is the cluster the Kubernetes rows are measured on
// (the test node of `make cluster`), with the agent image made from the
// binary measured.
type kubernetesCluster struct {
	kubeconfig, namespace, agentImage string
	client                            k8s.Interface
	rest                              *rest.Config
	version                           string
}

// serverArgs are the flags that put a measured wink-mcp on the cluster.
// The test node's bridge CNI enforces no NetworkPolicy, so the server is
// allowed to make workspaces without it; the flag only allows, so where
// an enforcer runs the policy is enforced all the same and nothing else
// changes (the probe runs either way, once per server).
func (k *kubernetesCluster) serverArgs() []string {
	return []string{"--engine", "kubernetes", "--kubeconfig", k.kubeconfig, "--namespace", k.namespace,
		"--kubernetes-agent-image", k.agentImage, "--allow-unenforced-network-policy", "--disk-limit", "1g"}
}

// connectKubernetes checks that the cluster at cfg.kubeconfig answers and
// has a Ready node, makes cfg.namespace if missing, and builds and imports
// the agent image. Its errors say what to run.
func connectKubernetes(ctx context.Context, cfg config) (*kubernetesCluster, error) {
	if _, err := os.Stat(cfg.kubeconfig); err != nil {
		return nil, fmt.Errorf("the Kubernetes rows need a cluster, and -kubeconfig %s cannot be read (%v): run `make cluster` (`make bench` does), or pass -kubeconfig", cfg.kubeconfig, err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("-kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	client, err := k8s.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("-kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	k := &kubernetesCluster{kubeconfig: cfg.kubeconfig, namespace: cfg.namespace, client: client, rest: restCfg}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("the cluster of -kubeconfig %s does not answer (%v): run `make cluster` (`make bench` does)", cfg.kubeconfig, err)
	}
	if !anyReady(nodes.Items) {
		return nil, fmt.Errorf("the cluster of -kubeconfig %s has no Ready node among %d: run `make cluster`", cfg.kubeconfig, len(nodes.Items))
	}
	if v, err := client.Discovery().ServerVersion(); err == nil {
		k.version = v.GitVersion
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("making namespace %s (-namespace): %w", cfg.namespace, err)
	}
	if k.agentImage, err = importAgentImage(cfg); err != nil {
		return nil, err
	}
	return k, nil
}

// anyReady tells whether one of nodes is Ready.
func anyReady(nodes []corev1.Node) bool {
	for _, n := range nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// importAgentImage builds, with Podman, the image of the workspace Pods'
// init container from cfg.bin (only the static binary, at /wink-mcp), and
// imports it into the node's containerd at cfg.clusterContainerd: the
// test node reaches no registry. It is named by the binary's hash, as the
// integration tests name theirs, so a second run reuses it.
func importAgentImage(cfg config) (string, error) {
	data, err := os.ReadFile(cfg.bin)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	name := "localhost/wink-agent:" + hex.EncodeToString(sum[:6])
	if _, err := os.Stat(cfg.clusterContainerd); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the test node's containerd socket %s (-cluster-containerd) is missing: run `make cluster`", cfg.clusterContainerd)
	}
	dir, err := os.MkdirTemp("", "wink-bench-agent-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	err = os.WriteFile(filepath.Join(dir, "wink-mcp"), data, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM scratch\nCOPY wink-mcp /wink-mcp\n"), 0o644)
	}
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("podman", "build", "-q", "-t", name, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the agent image %s: %v: %s", name, err, out)
	}
	importCmd := fmt.Sprintf("podman save %s | ctr --address %s --namespace k8s.io images import -", name, cfg.clusterContainerd)
	if out, err := exec.Command("sh", "-c", importCmd).CombinedOutput(); err != nil {
		return "", fmt.Errorf("importing %s into the test node: %v: %s", name, err, out)
	}
	return name, nil
}

// kubernetesRows are the Kubernetes engine's measurements, each beside
// the Podman row it compares with.
type kubernetesRows struct {
	reads, shells, execBaseline, pooled, unpooled measurement
}

// all returns the rows in the table's order.
func (r kubernetesRows) all() []measurement {
	return []measurement{r.reads, r.shells, r.execBaseline, r.pooled, r.unpooled}
}

// measureKubernetes measures the Kubernetes engine on the cluster k: warm
// read_file and podman_shell over stdio in one session, one new exec per
// read through client-go as their baseline, and the first call of a new
// HTTP session with a warm pool of ready Pods and without one.
func measureKubernetes(ctx context.Context, cfg config, k *kubernetesCluster) (kubernetesRows, error) {
	var rows kubernetesRows
	kcfg := cfg
	kcfg.kubernetes = k
	s, err := startSession(ctx, kcfg)
	if err != nil {
		return rows, err
	}
	defer s.close()
	if err := s.prepare(ctx); err != nil {
		return rows, err
	}
	fmt.Fprintf(os.Stderr, "measuring warm calls in Pod %s...\n", s.container)
	rows.reads = measure("Kubernetes: read_file 4 KiB", cfg.samples, func(int) error {
		return s.expect(ctx, "read_file", map[string]any{"file_path": "bench/read.txt"})
	})
	rows.shells = measure("Kubernetes: podman_shell [\"true\"]", cfg.samples, func(int) error {
		return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"true"}})
	})
	rows.execBaseline = measure("Kubernetes baseline: a new exec of cat per read (client-go)", cfg.samples, func(int) error {
		return execCat(ctx, k, s.container, "/workspace/bench/read.txt", len(fourKiB))
	})
	s.close()
	fmt.Fprintf(os.Stderr, "measuring new Kubernetes sessions over HTTP...\n")
	rows.pooled = measureHTTPFirstCalls(ctx, kcfg, "Kubernetes HTTP: first call of a new session, --warm 4", cfg.httpSamples, 4)
	rows.unpooled = measureHTTPFirstCalls(ctx, kcfg, "Kubernetes HTTP: first call of a new session, --warm 0", cfg.kubernetesColdSamples, 0)
	rows.reads.Target, rows.reads.Met = "p50 <= 5 ms", rows.reads.P50 <= 5 && rows.reads.Errors == 0
	rows.shells.Target, rows.shells.Met = "p50 <= 5 ms", rows.shells.P50 <= 5 && rows.shells.Errors == 0
	rows.pooled.Target, rows.pooled.Met = "p50 <= 50 ms", rows.pooled.P50 <= 50 && rows.pooled.Errors == 0
	return rows, nil
}

// execCat reads path in the Pod's workspace container the way a design of
// one exec per call would: a new exec of cat through client-go, over
// WebSocket (SPDY where the API server cannot upgrade), as the engine
// opens its one long-lived stream. It checks that want bytes came back.
func execCat(ctx context.Context, k *kubernetesCluster, pod, path string, want int) error {
	req := k.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(k.namespace).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: "workspace", Command: []string{"cat", path}, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(k.rest, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(k.rest, "POST", req.URL())
	if err != nil {
		return err
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	var out, errOut bytes.Buffer
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil {
		return fmt.Errorf("exec cat in Pod %s: %w (%s)", pod, err, errOut.String())
	}
	if out.Len() != want {
		return fmt.Errorf("cat in Pod %s returned %d bytes, want %d", pod, out.Len(), want)
	}
	return nil
}

package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The test node's registry (hack/cluster/registry.sh), whose certificate
// the cluster's CA signs.
var (
	clusterRegistry   = envOr("WINK_TEST_REGISTRY", "localhost:5000")
	clusterRegistryCA = envOr("WINK_TEST_REGISTRY_CA", "/var/lib/wink-mcp/cluster/pki/ca.crt")
)

// needRegistry returns a client of the test node's registry, failing the
// test when CI is set and the registry does not answer, skipping it else.
func needRegistry(t *testing.T) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(clusterRegistryCA)
	if err == nil {
		pool.AppendCertsFromPEM(ca)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err == nil {
		var res *http.Response
		if res, err = client.Get("https://" + clusterRegistry + "/v2/"); err == nil {
			res.Body.Close()
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the test node's registry does not answer: %v; run `make cluster`", err)
		}
		t.Skipf("the test node's registry does not answer (%v); run `make cluster`", err)
	}
	return client
}

// TestKubernetesPushedProfile builds a profile whose setup writes a marker
// into its image, pushes it to the test node's registry with `profiles
// build --push`, and runs a session of it with --engine kubernetes: the
// node pulls the image from the registry (the Pod's imageID is the pushed
// digest) and the session sees the marker. A profile that was not pushed
// fails its first call naming the profile and the command to run.
func TestKubernetesPushedProfile(t *testing.T) {
	cs, _ := needCluster(t)
	registry := needRegistry(t)
	file, nonce := profilesFile(t, `profiles:
  marked-NONCE:
    image: PY_IMAGE
    setup:
      - echo marker-NONCE > /etc/wink-marker
  unpushed-NONCE:
    image: PY_IMAGE
    setup:
      - echo other > /etc/wink-marker
`)
	repo := clusterRegistry + "/wink-test-" + nonce
	begin := time.Now()
	out, err := profilesCLI(t, file, t.TempDir(), "build", "marked-"+nonce, "--push", repo)
	if err != nil {
		t.Fatalf("profiles build --push: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`pushed (\S+) as (\S+@(sha256:[0-9a-f]{64})) in ([0-9.]+) s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("profiles build --push printed no pushed reference by digest:\n%s", out)
	}
	tagged, byDigest, digest := m[1], m[2], m[3]
	t.Logf("built and pushed in %v (push %s s): %s", time.Since(begin).Round(time.Millisecond), m[4], byDigest)
	t.Cleanup(func() { forgetPushed(t, registry, repo, tagged, digest) })
	if !strings.HasPrefix(tagged, repo+":marked-"+nonce+"-") {
		t.Errorf("pushed as %s; want %s:marked-%s-<hash>", tagged, repo, nonce)
	}

	prefix := "wkp" + randomHex(4)
	p := startKubernetes(t, cs, prefix, "", "--profiles", file, "--profile", "marked-"+nonce, "--kubernetes-profile-repository", repo)
	begin = time.Now()
	if res := p.run("cat", "/etc/wink-marker"); res.ExitCode != 0 || res.Stdout != "marker-"+nonce+"\n" {
		t.Fatalf("cat /etc/wink-marker: %+v; want the setup's marker", res)
	}
	first := time.Since(begin)
	pods := podsNamed(t, cs, prefix)
	if len(pods) != 1 {
		t.Fatalf("%d Pods named %s-...; want 1", len(pods), prefix)
	}
	checkPulledFrom(t, &pods[0], tagged, byDigest)
	t.Logf("first call %v; the kubelet: %s", first.Round(time.Millisecond), pullEvent(t, cs, &pods[0]))
	p.endSession()

	prefix = "wku" + randomHex(4)
	p = startKubernetes(t, cs, prefix, "", "--profiles", file, "--profile", "unpushed-"+nonce, "--kubernetes-profile-repository", repo)
	res := p.call("podman_shell", map[string]any{"command": []string{"true"}})
	msg := textOf(res)
	for _, want := range []string{`profile "unpushed-` + nonce + `"`, "wink-mcp profiles build unpushed-" + nonce + " --push " + repo} {
		if !res.IsError || !strings.Contains(msg, want) {
			t.Errorf("a call of a profile that was not pushed: error %v, %q; want it to contain %q", res.IsError, msg, want)
		}
	}
}

// checkPulledFrom checks that the workspace container of pod runs image,
// pulled from the registry as byDigest.
func checkPulledFrom(t *testing.T, pod *corev1.Pod, image, byDigest string) {
	t.Helper()
	for _, s := range pod.Status.ContainerStatuses {
		if s.Image == image || s.Image == "docker.io/"+image {
			if s.ImageID != byDigest {
				t.Errorf("container %s's imageID %s; want %s, the pushed digest", s.Name, s.ImageID, byDigest)
			}
			return
		}
	}
	t.Errorf("no container of Pod %s runs %s: %+v", pod.Name, image, pod.Status.ContainerStatuses)
}

// pullEvent is the kubelet's event of the pull of pod's workspace image
// ("Successfully pulled image ... in ..."), or says there was none.
func pullEvent(t *testing.T, cs *kubernetes.Clientset, pod *corev1.Pod) string {
	t.Helper()
	events, err := cs.CoreV1().Events(pod.Namespace).List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=Pulled"})
	if err != nil {
		return err.Error()
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, "wink-test-") {
			return e.Message
		}
	}
	return "no Pulled event of the profile image"
}

// forgetPushed removes a pushed test image from the node's containerd and
// from the registry.
func forgetPushed(t *testing.T, registry *http.Client, repo, tagged, digest string) {
	for _, ref := range []string{tagged, repo + "@" + digest} {
		_ = exec.Command("ctr", "--address", clusterContainerd, "-n", "k8s.io", "images", "rm", ref).Run()
	}
	name := strings.TrimPrefix(repo, clusterRegistry+"/")
	req, _ := http.NewRequest(http.MethodDelete, "https://"+clusterRegistry+"/v2/"+name+"/manifests/"+digest, nil)
	if res, err := registry.Do(req); err != nil {
		t.Logf("deleting %s@%s from the registry: %v", repo, digest, err)
	} else {
		res.Body.Close()
	}
}

package integration

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// The Kubernetes engine's Lease timing (engine/kubernetes LeaseDuration,
// LeaseRenewEvery) and the survivors' sweep period (workspace
// clusterSweepPeriod): a dead server's Pods go within the first plus the
// last, and a margin for a loaded node.
const (
	leaseDuration    = 15 * time.Second
	leaseRenewEvery  = 5 * time.Second
	sweepPeriod      = 10 * time.Second
	sweptWithinSlack = 15 * time.Second
)

// leaseExists reports whether the instance's Lease is in the test namespace.
func leaseExists(t *testing.T, cs *kubernetes.Clientset, instance string) bool {
	t.Helper()
	_, err := cs.CoordinationV1().Leases(testNamespace).Get(context.Background(), "wink-mcp-instance-"+instance, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading the Lease of %s: %v", instance, err)
	}
	return err == nil
}

// podGone reports whether the Pod is no longer in the test namespace.
func podGone(t *testing.T, cs *kubernetes.Clientset, name string) bool {
	t.Helper()
	_, err := cs.CoreV1().Pods(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading Pod %s: %v", name, err)
	}
	return apierrors.IsNotFound(err)
}

// forgetMachine deletes the cache directory of a killed server, its lock
// file with it, as though the server had run on another machine: here
// every server runs on this one, whose free lock files would let B sweep
// at once, and the test is of what the Lease alone decides.
func forgetMachine(t *testing.T, cache string) {
	t.Helper()
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
}

// TestKubernetesLeases runs servers of different instances and cache
// directories, as replicas on different machines are, on one namespace:
// A makes a Pod; C is killed while its network probe Pod runs; B, started
// after, leaves A's Pod alone while A lives (two periodic sweeps), and
// once A is killed with SIGKILL deletes its Pod and Lease within the
// Lease's duration plus a sweep period, and C's probe Pod and Lease. B,
// idle, renews its Lease every 5 s; a clean shutdown leaves no Lease.
func TestKubernetesLeases(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wl" + randomHex(4)
	aCache, cCache := t.TempDir(), t.TempDir()
	a := startKubernetes(t, cs, prefix, aCache)
	aID := instanceOf(t, a)
	aPod := a.container()
	if !leaseExists(t, cs, aID) {
		t.Fatalf("server A runs a Pod and has no Lease")
	}

	c := startKubernetes(t, cs, prefix, cCache, "--lazy")
	cID := instanceOf(t, c)
	var probe string
	waitUntil(t, 30*time.Second, "C's network probe Pod", func() bool {
		list, err := cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{
			LabelSelector: "io.wink-mcp.network-probe=true,io.wink-mcp.instance=" + cID})
		if err == nil && len(list.Items) > 0 {
			probe = list.Items[0].Name
		}
		return probe != ""
	})
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.waitExit(10 * time.Second)
	forgetMachine(t, cCache)

	b := startKubernetes(t, cs, prefix, t.TempDir(), "--lazy", "--log-level", "debug")
	bID := instanceOf(t, b)
	waitUntil(t, 3*sweepPeriod, "two periodic sweeps of B", func() bool {
		n := 0
		for _, rec := range b.logs.records() {
			if rec["msg"] == "periodic orphan sweep done" {
				n++
			}
		}
		return n >= 2
	})
	if podGone(t, cs, aPod) || !leaseExists(t, cs, aID) {
		t.Fatalf("B swept the Pod or Lease of A, which is alive")
	}
	if res := a.run("echo", "alive"); res.Stdout != "alive\n" {
		t.Errorf("A's session after B's sweeps: %+v", res)
	}

	killed := time.Now()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.waitExit(10 * time.Second)
	forgetMachine(t, aCache)
	waitUntil(t, leaseDuration+sweepPeriod+sweptWithinSlack, "B to sweep the Pod of A, killed", func() bool { return podGone(t, cs, aPod) })
	swept := time.Since(killed)
	waitUntil(t, sweepPeriod+sweptWithinSlack, "B to delete the Lease of A", func() bool { return !leaseExists(t, cs, aID) })
	t.Logf("B swept A's Pod %v after A's SIGKILL, its Lease %v after", swept.Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond))
	waitUntil(t, sweepPeriod+sweptWithinSlack, "B to sweep C's probe Pod and Lease", func() bool {
		return podGone(t, cs, probe) && !leaseExists(t, cs, cID)
	})

	// B idle: its Lease is written every leaseRenewEvery, nothing more.
	w, err := cs.CoordinationV1().Leases(testNamespace).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=wink-mcp-instance-" + bID})
	if err != nil {
		t.Fatal(err)
	}
	const idle = 4 * leaseRenewEvery
	writes := 0
	deadline := time.After(idle)
watching:
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Modified {
				writes++
			}
		case <-deadline:
			break watching
		}
	}
	w.Stop()
	t.Logf("B idle: %d writes of its Lease in %v", writes, idle)
	if writes < 2 || writes > 5 {
		t.Errorf("B wrote its Lease %d times in %v; want one write every %v", writes, idle, leaseRenewEvery)
	}

	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.waitExit(30 * time.Second)
	if leaseExists(t, cs, bID) {
		t.Errorf("B ended cleanly and left its Lease")
	}
	if left := podsNamed(t, cs, prefix); len(left) > 0 {
		t.Errorf("Pods left: %v", left)
	}
}

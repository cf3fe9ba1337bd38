package integration

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	k8sengine "github.com/wink-mcp/wink-mcp/engine/kubernetes"
	"github.com/wink-mcp/wink-mcp/wire"
)

// TestKubernetesChannel drives the Kubernetes engine itself on the test
// node: it makes a Pod, then measures what opening a channel (one exec
// stream running the relay) and its first ping cost, and what a ping costs
// on an open channel: why the engine opens one stream and keeps it.
func TestKubernetesChannel(t *testing.T) {
	cs, _ := needCluster(t)
	prefix := "wk" + randomHex(4)
	t.Cleanup(func() { deletePods(cs, prefix) })
	e := k8sengine.New(k8sengine.Options{Kubeconfig: clusterKubeconfig, AgentImage: kubernetesAgentImage(t),
		APITimeout: 30 * time.Second, StartTimeout: 2 * time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := prefix + "-channel"
	spec := engine.Spec{Name: name, Image: pythonImage, User: "65534:65534", Root: "/workspace",
		Labels: map[string]string{"io.wink-mcp.managed": "true"}, WorkspaceVolume: name, CopyAgent: true,
		Limits: engine.Limits{MemoryBytes: 256 << 20, CPUs: 1, TmpBytes: 64 << 20}}
	if err := e.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, name); err != nil {
		t.Fatal(err)
	}
	ping := func(c *wire.Client) time.Duration {
		begin := time.Now()
		var res wire.PingResult
		if err := c.Call(ctx, wire.OpPing, nil, &res); err != nil {
			t.Fatalf("ping: %v", err)
		}
		return time.Since(begin)
	}
	var opens, pings []time.Duration
	for range 5 {
		begin := time.Now()
		ch, err := e.OpenChannel(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		c := wire.NewClient(ch, ch)
		ping(c)
		opens = append(opens, time.Since(begin))
		for range 20 {
			pings = append(pings, ping(c))
		}
		ch.Close()
	}
	slices.Sort(opens)
	slices.Sort(pings)
	t.Logf("channel open and first ping: median %v (min %v, max %v); ping on an open channel: median %v, p90 %v",
		opens[2].Round(time.Millisecond), opens[0].Round(time.Millisecond), opens[4].Round(time.Millisecond),
		pings[len(pings)/2].Round(10*time.Microsecond), pings[len(pings)*9/10].Round(10*time.Microsecond))
	if err := e.Remove(ctx, name); err != nil {
		t.Fatal(err)
	}
	if exists, _, err := e.Running(ctx, name); exists || err != nil {
		t.Errorf("after Remove: exists %v, %v", exists, err)
	}
}

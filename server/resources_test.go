package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestSubscriptionsAffectedByAChange(t *testing.T) {
	subs := newSubscriptions()
	for _, uri := range []string{SnapshotURI, fileURI("src/a.py"), fileURI("src/lib/b.py"), fileURI("srcx/c.py")} {
		if err := subs.subscribe("s1", uri); err != nil {
			t.Fatal(err)
		}
	}
	if err := subs.subscribe("s2", "wink://workspace/files/src%2Fa.py"); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		paths []string
		want  []string
	}{
		{[]string{"src/a.py"}, []string{SnapshotURI, fileURI("src/a.py")}},
		{[]string{"src"}, []string{SnapshotURI, fileURI("src/a.py"), fileURI("src/lib/b.py")}},
		{[]string{"other.txt"}, []string{SnapshotURI}},
	} {
		got := subs.affected("s1", tc.paths)
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("affected(%q) = %q, want %q", tc.paths, got, tc.want)
		}
	}
	subs.remove("s1", SnapshotURI)
	subs.drop("s2")
	if got := subs.affected("s1", []string{"x"}); len(got) != 0 {
		t.Errorf("after unsubscribe: %q", got)
	}
	if got := subs.affected("s2", []string{"src/a.py"}); len(got) != 0 {
		t.Errorf("after the session ended: %q", got)
	}
}

// TestSubscribeAcceptsOnlyOwnURIsUpToTheCap: a subscription names this
// server's snapshot or a workspace file with a valid path, a session holds
// at most MaxSubscriptions, and a refusal names the field and what to do.
func TestSubscribeAcceptsOnlyOwnURIsUpToTheCap(t *testing.T) {
	t.Parallel()
	for _, uri := range []string{
		"file:///etc/passwd", "", "wink://workspace/files/", "wink://workspace/files/../../etc/passwd",
		"wink://workspace/files/%2e%2e/x", "wink://workspace/files//etc/passwd", "wink://workspace/files/a%zz",
		"wink://workspace/files/caf\u00e9", "wink://workspace/snapshot/x", "wink://other/files/a",
	} {
		err := newSubscriptions().subscribe("s", uri)
		if err == nil || !strings.HasPrefix(err.Error(), "uri: ") {
			t.Errorf("subscribe(%q) = %v, want an error naming uri", uri, err)
		}
	}
	subs := newSubscriptions()
	for i := range MaxSubscriptions {
		if err := subs.subscribe("s", fileURI(fmt.Sprintf("f%d.txt", i))); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	if err := subs.subscribe("s", fileURI("f0.txt")); err != nil {
		t.Errorf("subscribing again to a subscribed URI at the cap: %v", err)
	}
	err := subs.subscribe("s", fileURI("one-more.txt"))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxSubscriptions)) {
		t.Errorf("subscription past the cap: %v, want an error naming %d", err, MaxSubscriptions)
	}
	if err := subs.subscribe("other", fileURI("one-more.txt")); err != nil {
		t.Errorf("another session's first subscription: %v", err)
	}
}

// TestSubscribeRefusalReachesTheClient checks the refusal is the answer to
// resources/subscribe, not a silent success.
func TestSubscribeRefusalReachesTheClient(t *testing.T) {
	c, _ := connect(t, newTestServer(t))
	var req mcp.SubscribeRequest
	req.Params.URI = "file:///etc/passwd"
	//lint:ignore SA1019 clients of the protocol before 2026-07-28 still subscribe this way; the server serves them
	if err := c.Subscribe(t.Context(), req); err == nil || !strings.Contains(err.Error(), "not a resource of this server") {
		t.Errorf("subscribe to file:///etc/passwd: %v, want a refusal", err)
	}
	req.Params.URI = SnapshotURI
	//lint:ignore SA1019 clients of the protocol before 2026-07-28 still subscribe this way; the server serves them
	if err := c.Subscribe(t.Context(), req); err != nil {
		t.Errorf("subscribe to the snapshot: %v", err)
	}
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// streamClient is the client end of a listen stream in unit tests: a
// notification channel of a given room, never read unless a test does.
type streamClient struct{ ch chan mcp.JSONRPCNotification }

func (c *streamClient) SessionID() string                                   { return "" }
func (c *streamClient) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.ch }
func (c *streamClient) Initialize()                                         {}
func (c *streamClient) Initialized() bool                                   { return true }

// listenRequest returns a subscriptions/listen request following uris.
func listenRequest(t *testing.T, id string, uris ...string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
		"params": map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// listenAs starts a listen of principal on a client with room notifications
// of room; it returns the stream's context (done when the stream is
// ended), the function that ends the request, and startListen's error.
func listenAs(t *testing.T, v *handleViews, principal string, room int, uris ...string) (context.Context, context.CancelFunc, *streamClient, error) {
	t.Helper()
	c := &streamClient{ch: make(chan mcp.JSONRPCNotification, room)}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), principalKey{}, principal))
	ctx = withStopper(ctx)
	ctx = mcpserver.NewMCPServer("t", "1").WithContext(ctx, c)
	err := v.startListen(ctx, listenRequest(t, "listen:1", uris...))
	return ctx, cancel, c, err
}

// newTestViews returns views over a handle store of their own, whose
// handles are begun as a tool call of a server without shared records
// would begin them.
func newTestViews() (*handleViews, *handleStore) {
	store := newHandleStore()
	return newHandleViews(func(ctx context.Context, handle string) (string, func(), error) {
		return store.begin(handle, principalFrom(ctx))
	}), store
}

// openView opens a handle of principal and returns it with its resources' prefix.
func openView(v *handleViews, store *handleStore, principal string) (handle, session, prefix string) {
	handle, session = store.open(principal, nil)
	return handle, session, handleResourcesPrefix + v.opened(handle, session) + "/"
}

// TestListenIsBoundToItsPrincipal: another principal's reference, a made-up
// one and a closed one get the same unknown-handle error, and so does a
// read; the owner's listen is accepted.
func TestListenIsBoundToItsPrincipal(t *testing.T) {
	t.Parallel()
	v, store := newTestViews()
	_, session, prefix := openView(v, store, "alice")
	for _, principal := range []string{"bob", ""} {
		if _, cancel, _, err := listenAs(t, v, principal, 1, prefix+"snapshot"); err != errUnknownHandle {
			t.Errorf("%q following alice's workspace: %v", principal, err)
			cancel()
		}
		ctx := context.WithValue(context.Background(), principalKey{}, principal)
		if _, _, err := v.inWorkspace(ctx, strings.Split(prefix, "/")[3]); err != errUnknownHandle {
			t.Errorf("%q reading alice's workspace: %v", principal, err)
		}
	}
	if _, _, _, err := listenAs(t, v, "alice", 1, handleResourcesPrefix+refOf("wsh_never")+"/snapshot"); err != errUnknownHandle {
		t.Errorf("a reference never issued: %v", err)
	}
	_, cancel, _, err := listenAs(t, v, "alice", 1, prefix+"snapshot")
	if err != nil {
		t.Fatalf("alice following her workspace: %v", err)
	}
	defer cancel()
	v.ended(session)
	if _, _, _, err := listenAs(t, v, "alice", 1, prefix+"snapshot"); err != errUnknownHandle {
		t.Errorf("after the handle ended: %v", err)
	}
}

// TestListenBounds: at most MaxSubscriptions URIs per stream, one
// workspace per stream, MaxListensPerHandle streams per handle and
// MaxListensPerPrincipal per principal; each refusal says what to do, and
// a stream that ends gives its room back.
func TestListenBounds(t *testing.T) {
	t.Parallel()
	v, store := newTestViews()
	_, _, prefix := openView(v, store, "alice")
	_, _, other := openView(v, store, "alice")
	many := make([]string, MaxSubscriptions+1)
	for i := range many {
		many[i] = fmt.Sprintf("%sfiles/f%d", prefix, i)
	}
	if _, _, _, err := listenAs(t, v, "alice", 1, many...); err == nil || !strings.Contains(err.Error(), "snapshot") {
		t.Errorf("%d URIs: %v", len(many), err)
	}
	if _, _, _, err := listenAs(t, v, "alice", 1, prefix+"snapshot", other+"snapshot"); err == nil || !strings.Contains(err.Error(), "one per handle") {
		t.Errorf("two workspaces in one stream: %v", err)
	}
	var cancels []context.CancelFunc
	for range MaxListensPerHandle {
		_, cancel, _, err := listenAs(t, v, "alice", 1, prefix+"snapshot")
		if err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, cancel)
	}
	_, _, _, err := listenAs(t, v, "alice", 1, prefix+"snapshot")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxListensPerHandle)) {
		t.Fatalf("stream %d of a handle: %v", MaxListensPerHandle+1, err)
	}
	cancels[0]()
	waitUntilTrue(t, func() bool {
		_, c, _, err := listenAs(t, v, "alice", 1, prefix+"snapshot")
		cancels[0] = c
		return err == nil
	})

	// Per principal: fill up with streams of many handles.
	crowd, crowdStore := newTestViews()
	for i := 0; ; i++ {
		_, _, p := openView(crowd, crowdStore, "bob")
		_, _, _, err := listenAs(t, crowd, "bob", 1, p+"snapshot")
		if err != nil {
			if i != MaxListensPerPrincipal || !strings.Contains(err.Error(), "close some") {
				t.Fatalf("stream %d of a principal: %v", i+1, err)
			}
			break
		}
	}
	if _, _, p := openView(crowd, crowdStore, "carol"); true {
		if _, _, _, err := listenAs(t, crowd, "carol", 1, p+"snapshot"); err != nil {
			t.Errorf("another principal at bob's bound: %v", err)
		}
	}
}

// TestListenersNeverBlock: a crowd of changes to a stream whose client
// reads nothing, racing with the handle's end, neither waits nor
// panics; a reading stream gets its updates, tagged with its id; the
// handle's end ends every stream that follows it.
func TestListenersNeverBlock(t *testing.T) {
	t.Parallel()
	v, store := newTestViews()
	_, session, prefix := openView(v, store, "alice")
	stuck, cancelStuck, _, err := listenAs(t, v, "alice", 1, prefix+"snapshot")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelStuck()
	reading, cancelReading, c, err := listenAs(t, v, "alice", 1000, prefix+"files/src/a.py")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelReading()
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				v.listens.changed(session, []string{"src"}, slog.New(slog.DiscardHandler))
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("1600 changes to a stuck stream took %s", d)
	}
	n := <-c.ch
	if n.Method != string(mcp.MethodNotificationResourceUpdated) || n.Params.AdditionalFields["uri"] != prefix+"files/src/a.py" || string(n.Params.Meta[mcp.MetaKeySubscriptionID].(json.RawMessage)) != `"listen:1"` {
		t.Errorf("notification %+v", n)
	}
	v.listens.changed(session, []string{"other.txt"}, slog.New(slog.DiscardHandler))
	for len(c.ch) > 0 {
		if n := <-c.ch; n.Params.AdditionalFields["uri"] != prefix+"files/src/a.py" {
			t.Errorf("a change elsewhere sent %v", n.Params.AdditionalFields["uri"])
		}
	}
	v.ended(session)
	for _, ctx := range []context.Context{stuck, reading} {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a stream outlived its handle")
		}
	}
	if got := len(v.listens.of(session)); got != 0 {
		t.Errorf("%d streams left after the handle ended", got)
	}
}

// waitUntilTrue waits up to 5 s for cond.
func waitUntilTrue(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 5 s")
}

// TestListChangesStreamsAreBounded: a subscriptions/listen that follows
// no resource, which mcp-go holds open once tools' list changes are
// offered, counts against its principal's MaxListensPerPrincipal like any
// stream, gives its room back when it ends, and leaves other principals
// alone.
func TestListChangesStreamsAreBounded(t *testing.T) {
	t.Parallel()
	v, store := newTestViews()
	var cancels []context.CancelFunc
	for range MaxListensPerPrincipal {
		_, cancel, _, err := listenAs(t, v, "dave", 1)
		if err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, cancel)
	}
	_, _, _, err := listenAs(t, v, "dave", 1)
	if err == nil || !strings.Contains(err.Error(), "close some") {
		t.Fatalf("stream %d of a principal: %v", MaxListensPerPrincipal+1, err)
	}
	_, _, p := openView(v, store, "dave")
	if _, _, _, err := listenAs(t, v, "dave", 1, p+"snapshot"); err == nil {
		t.Error("a resource stream past the bound the list-change streams filled was accepted")
	}
	if _, _, _, err := listenAs(t, v, "erin", 1); err != nil {
		t.Errorf("another principal at dave's bound: %v", err)
	}
	cancels[0]()
	waitUntilTrue(t, func() bool {
		_, c, _, err := listenAs(t, v, "dave", 1)
		cancels[0] = c
		return err == nil
	})
	for _, c := range cancels {
		c()
	}
}

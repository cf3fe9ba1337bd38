package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHandlesAreUnguessableAndBoundToTheirPrincipal(t *testing.T) {
	st := newHandleStore()
	a, sessionA := st.open("alice", nil)
	b, _ := st.open("bob", nil)
	if a == b || !strings.HasPrefix(a, handlePrefix) {
		t.Fatalf("handles %q and %q", a, b)
	}
	if raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a, handlePrefix)); err != nil || len(raw)*8 < 128 {
		t.Fatalf("handle %q carries %d bits (%v), want at least 128", a, len(raw)*8, err)
	}
	if strings.Contains(sessionA, strings.TrimPrefix(a, handlePrefix)) {
		t.Errorf("the manager session %q shows the handle", sessionA)
	}
	// Another principal's handle answers exactly as an unknown one.
	for _, h := range []string{b, handlePrefix + "guess", ""} {
		if _, _, err := st.begin(h, "alice"); !errors.Is(err, errUnknownHandle) {
			t.Errorf("alice using %q: %v", h, err)
		}
		if _, _, err := st.close(h, "alice"); !errors.Is(err, errUnknownHandle) {
			t.Errorf("alice closing %q: %v", h, err)
		}
	}
	session, end, err := st.begin(a, "alice")
	if err != nil || session != sessionA {
		t.Fatalf("alice's own handle: %q, %v", session, err)
	}
	end()
	if got, _, err := st.close(a, "alice"); err != nil || got != sessionA {
		t.Fatalf("close: %q, %v", got, err)
	}
	if _, _, err := st.begin(a, "alice"); !errors.Is(err, errUnknownHandle) {
		t.Errorf("a closed handle: %v", err)
	}
}

func TestIdleHandlesExpireButNotDuringACall(t *testing.T) {
	st := newHandleStore()
	now := time.Unix(1000, 0)
	st.now = func() time.Time { return now }
	busy, busySession := st.open("p", nil)
	idle, idleSession := st.open("p", nil)
	_, end, err := st.begin(busy, "p")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if got := st.expire(time.Minute); len(got) != 1 || got[0].session != idleSession {
		t.Fatalf("expired %v, want only %s", got, idleSession)
	}
	if _, _, err := st.begin(idle, "p"); !errors.Is(err, errUnknownHandle) {
		t.Errorf("an expired handle: %v", err)
	}
	end()
	if got := st.expire(time.Minute); len(got) != 0 {
		t.Errorf("expired %v right after a call", got)
	}
	now = now.Add(time.Minute)
	if got := st.expire(time.Minute); len(got) != 1 || got[0].session != busySession {
		t.Errorf("expired %v, want %s", got, busySession)
	}
}

func TestTheHandleArgumentIsTakenOut(t *testing.T) {
	rest, handle, named, err := takeHandleArg(json.RawMessage(`{"path":"a","workspace":"wsh_x"}`))
	if err != nil || !named || handle != "wsh_x" || string(rest) != `{"path":"a"}` {
		t.Errorf("got %s, %q, %v, %v", rest, handle, named, err)
	}
	rest, _, named, err = takeHandleArg(json.RawMessage(`{"path":"a"}`))
	if err != nil || named || string(rest) != `{"path":"a"}` {
		t.Errorf("without a handle: %s, %v, %v", rest, named, err)
	}
	if _, handle, named, err := takeHandleArg(map[string]any{"path": "a", "workspace": "wsh_y"}); err != nil || !named || handle != "wsh_y" {
		t.Errorf("from a map: %q, %v, %v", handle, named, err)
	}
	if _, _, named, err := takeHandleArg(json.RawMessage(`{"content":"the workspace word"}`)); err != nil || named {
		t.Errorf("the word in a value: %v, %v", named, err)
	}
	if _, _, _, err := takeHandleArg(json.RawMessage(`{"workspace":5}`)); err == nil || !strings.Contains(err.Error(), "`workspace` argument must be a string") {
		t.Errorf("a number: %v", err)
	}
}

func TestAHandleInAQueryStringIsRecognised(t *testing.T) {
	if !inQuery("workspace=" + handlePrefix + "abc") {
		t.Error("a handle in the query was not recognised")
	}
	if !inQuery("x=%77sh%5Fabc") {
		t.Error("a percent-encoded handle in the query was not recognised")
	}
	if inQuery("workspace=kept-name&profile=go") {
		t.Error("a kept workspace name was taken for a handle")
	}
}

// TestAWantedHandleIsLetGoOnlyWhenNoCallRuns: a handle whose workspace
// another server asked for is let go (its session ended, its quota back)
// at once when idle, and otherwise when its last running call ends.
func TestAWantedHandleIsLetGoOnlyWhenNoCallRuns(t *testing.T) {
	st := newHandleStore()
	let := make(chan string, 2)
	st.letGo = func(session string) { let <- session }
	idle, idleSession := st.open("p", nil)
	busy, busySession := st.open("p", nil)
	_, end, err := st.begin(busy, "p")
	if err != nil {
		t.Fatal(err)
	}
	st.want(idle)
	st.want(busy)
	if got := <-let; got != idleSession {
		t.Fatalf("let go %s first, want the idle %s", got, idleSession)
	}
	select {
	case got := <-let:
		t.Fatalf("%s let go while its call runs", got)
	case <-time.After(50 * time.Millisecond):
	}
	end()
	if got := <-let; got != busySession {
		t.Fatalf("let go %s, want %s after its call", got, busySession)
	}
	if st.count() != 0 {
		t.Errorf("%d handles still held", st.count())
	}
}

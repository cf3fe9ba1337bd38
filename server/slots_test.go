package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
	"github.com/wink-mcp/wink-mcp/tools"
)

// heldInitialize sends an initialize's headers asking to continue and
// returns the connection, its reader and the status the headers got: 100
// says the request is past the session cap and waits for its body.
func heldInitialize(t *testing.T, base, session string) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Content-Length: %d\r\nExpect: 100-continue\r\n", streamablePath, host, len(initializeBody))
	if session != "" {
		head += "Mcp-Session-Id: " + session + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(conn)
	if session != "" {
		return conn, rd, http.StatusContinue // a session's request is never refused at its headers
	}
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conn, rd, resp.StatusCode
}

// finish sends a held initialize's body and returns the session it opened.
func finish(t *testing.T, conn net.Conn, rd *bufio.Reader) string {
	t.Helper()
	if _, err := io.WriteString(conn, initializeBody); err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusContinue { // a session's request is told to continue as its body is read
			return resp.Header.Get("Mcp-Session-Id")
		}
	}
}

// A crowd of initializes whose headers all arrive before any body gets
// exactly the --max-sessions slots: the cap is checked and the slot taken
// at the headers, not counted later at the session's making.
func TestCrowdOfInitializesGetsExactlyTheSlots(t *testing.T) {
	const limit, crowd = 3, 9
	s := httpTestServer(t, func(c *Config) { c.HTTP.MaxSessions = limit })
	base := serveHTTP(t, s, TransportHTTP)
	type held struct {
		conn net.Conn
		rd   *bufio.Reader
	}
	var waiting []held
	refused := 0
	for range crowd {
		conn, rd, status := heldInitialize(t, base, "")
		switch status {
		case http.StatusContinue:
			waiting = append(waiting, held{conn, rd})
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("an initialize's headers got %d", status)
		}
	}
	if len(waiting) != limit || refused != crowd-limit {
		t.Fatalf("%d of %d initializes let past the cap of %d, %d refused", len(waiting), crowd, limit, refused)
	}
	var wg sync.WaitGroup
	ids := make([]string, len(waiting))
	for i, h := range waiting {
		wg.Go(func() { ids[i] = finish(t, h.conn, h.rd) })
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" {
			t.Errorf("an initialize let past the cap got no session: %q", ids)
		}
	}
	if n := s.sessions.count(); n != limit {
		t.Errorf("%d sessions and slots held, want %d", n, limit)
	}
	for _, id := range ids {
		request(t, http.MethodDelete, base+streamablePath, id, "")
	}
	if n := s.sessions.count(); n != 0 {
		t.Errorf("%d sessions and slots held after every session ended", n)
	}
}

// Every way an opening request can end without a session gives its slot
// back at once: headers and no body, a failed initialize, an initialize
// sent with a session's id past the cap.
func TestSlotsComeBackFromRequestsThatOpenNothing(t *testing.T) {
	s := httpTestServer(t, func(c *Config) { c.HTTP.MaxSessions = 1 })
	base := serveHTTP(t, s, TransportHTTP)

	conn, _, status := heldInitialize(t, base, "")
	if status != http.StatusContinue {
		t.Fatalf("a first initialize's headers: %d", status)
	}
	conn.Close() // the body never comes
	testwait.For(t, "the slot of an initialize whose body never came", func() bool { return s.sessions.count() == 0 })

	id := initialize(t, base)
	conn, rd, _ := heldInitialize(t, base, id)
	if again := finish(t, conn, rd); again != "" {
		t.Errorf("an initialize sent with a session's id at the cap opened session %q", again)
	}
	if n := s.sessions.count(); n != 1 {
		t.Errorf("%d sessions and slots after an initialize past the cap, want 1", n)
	}
	request(t, http.MethodDelete, base+streamablePath, id, "")

	if code := request(t, http.MethodPost, base+streamablePath, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":5}`); code != http.StatusOK {
		t.Fatalf("a failed initialize: HTTP %d", code)
	}
	if n := s.sessions.count(); n != 0 {
		t.Errorf("a failed initialize left %d sessions or slots", n)
	}
}

// A crowd of SSE streams opened at once gets exactly the slots; a stream
// that ends gives its slot back.
func TestCrowdOfSSEStreamsGetsExactlyTheSlots(t *testing.T) {
	const limit, crowd = 3, 9
	s := httpTestServer(t, func(c *Config) { c.HTTP.MaxSessions = limit })
	base := serveHTTP(t, s, TransportSSE)
	var mu sync.Mutex
	var open []*http.Response
	var wg sync.WaitGroup
	for range crowd {
		wg.Go(func() {
			resp, err := http.Get(base + ssePath)
			if err != nil {
				t.Error(err)
				return
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				return
			}
			mu.Lock()
			open = append(open, resp)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(open) != limit || s.sessions.count() != limit {
		t.Fatalf("%d of %d streams opened against a cap of %d; %d sessions counted", len(open), crowd, limit, s.sessions.count())
	}
	for _, resp := range open {
		resp.Body.Close()
	}
	testwait.For(t, "the ended streams' slots", func() bool { return s.sessions.count() == 0 })
}

// A handoff and a new session racing for the last slot are counted under
// one lock: whichever comes second is refused.
func TestHandoffAndInitializeShareTheCount(t *testing.T) {
	s := httpTestServer(t, func(c *Config) { c.HTTP.MaxSessions = 2 })
	base := serveHTTP(t, s, TransportHTTP)
	id := initialize(t, base)
	ws, err := s.mgr.Session(id)
	if err != nil {
		t.Fatal(err)
	}
	conn, rd, status := heldInitialize(t, base, "")
	if status != http.StatusContinue {
		t.Fatalf("an initialize for the last slot: %d", status)
	}
	if _, err := sessionPart[tools.Handoffs](t, ws).Handoff(t.Context(), time.Minute); err == nil || !strings.Contains(err.Error(), "--max-sessions 2") {
		t.Errorf("a handoff while an initialize holds the last slot: %v", err)
	}
	if finish(t, conn, rd) == "" {
		t.Error("the initialize holding the last slot got no session")
	}
}

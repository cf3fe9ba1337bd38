package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/internal/testwait"
)

// answerOn reads the proxy's answer on c: its status line and body.
func answerOn(t *testing.T, c net.Conn) (string, string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status, string(b)
}

// A connection past the session's limit waits for one to close and is
// then served; past the limit and a full queue it is turned away at once,
// and one that waited QueueWait in vain is turned away then, each answer
// naming wink-mcp's limit and the flag that raises it.
func TestProxyConnectionLimitQueues(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer upstream.Close()
	policy, err := ParsePolicy([]string{upstream.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 4
	s := NewSession(Config{Policy: policy, MaxConns: limit, QueueWait: 300 * time.Millisecond}, "test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer ln.Close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var idle []net.Conn
	for range limit {
		idle = append(idle, dial())
	}
	testwait.For(t, "the idle connections to hold every slot", func() bool { return len(s.slots) == limit })

	queued := dial()
	io.WriteString(queued, "GET "+upstream.URL+" HTTP/1.1\r\nHost: x\r\n\r\n")
	testwait.For(t, "the request to wait", func() bool { return s.waiting.Load() == 1 })
	idle[0].Close()
	if status, body := answerOn(t, queued); !strings.HasPrefix(status, "200") || body != "ok" {
		t.Fatalf("a queued request once a connection closed: %s %q", status, body)
	}
	queued.Close()

	testwait.For(t, "the slots to free", func() bool { return len(s.slots) == limit-1 })
	idle[0] = dial()
	testwait.For(t, "the slots to fill", func() bool { return len(s.slots) == limit })
	connect := func() net.Conn {
		c := dial()
		io.WriteString(c, "CONNECT "+upstream.Listener.Addr().String()+" HTTP/1.1\r\n\r\n")
		return c
	}
	var waiting []net.Conn
	for range queuedPerConn * limit {
		waiting = append(waiting, connect())
	}
	testwait.For(t, "a full queue", func() bool { return s.waiting.Load() == queuedPerConn*limit })
	status, body := answerOn(t, connect())
	if !strings.HasPrefix(status, "503 wink-mcp egress limit --egress-max-conns 4") || !strings.Contains(body, "16 more waiting") {
		t.Errorf("past the limit and a full queue: %s %q", status, body)
	}
	for _, c := range waiting {
		status, body := answerOn(t, c)
		if !strings.HasPrefix(status, "503 wink-mcp egress limit") || !strings.Contains(body, "none closed in the") || !strings.Contains(body, "larger --egress-max-conns") {
			t.Errorf("after waiting in vain: %s %q", status, body)
		}
	}
	testwait.For(t, "the queue to empty", func() bool { return s.waiting.Load() == 0 })
	for _, c := range idle {
		c.Close()
	}
	testwait.For(t, "every slot to free", func() bool { return len(s.slots) == 0 })
	if code, b := get(t, clientVia("http://"+ln.Addr().String(), nil), upstream.URL); code != 200 || b != "ok" {
		t.Fatalf("after closing: %d %q", code, b)
	}
}

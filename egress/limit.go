package egress

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// The session's connection limit. Package managers open many connections
// at once for a moment: npm 9 opened up to 452 at once through the proxy in
// one install of a few hundred packages (883 in all, most within seconds);
// Go 1.19 downloading 155 modules opened 3, at most 2 at once (HTTP/2).
// So a connection past the limit waits for one to close before it is turned
// away; one waiting costs a stream of the tunnel and no descriptor of the
// host's, which each open connection (dialled) does, or, on a tunnel's
// socket path, the descriptor of the client's socket the agent handed
// over (at most 1,024 a tunnel).
const (
	// DefaultMaxConns is --egress-max-conns's default.
	DefaultMaxConns = 256
	// MaxMaxConns bounds --egress-max-conns: each connection holds a file
	// descriptor of the server's, whose limit every session shares.
	MaxMaxConns = 4096
	// DefaultQueueWait is how long a connection past the limit waits for a
	// free slot before it is turned away.
	DefaultQueueWait = 30 * time.Second
	// queuedPerConn is how many connections may wait for each the limit
	// allows open.
	queuedPerConn = 4
)

// limitedListener hands the proxy's server at most the session's
// MaxConns connections at once. Those past it wait, four times as many at
// most, up to QueueWait each, for one to close; the rest, and those that
// waited in vain, are turned away with an answer naming wink-mcp's limit
// and the flag that raises it, never a hang.
type limitedListener struct {
	net.Listener
	s      *Session
	start  sync.Once
	stop   sync.Once
	ready  chan net.Conn
	failed chan error
	done   chan struct{}
}

func newLimitedListener(ln net.Listener, s *Session) *limitedListener {
	return &limitedListener{Listener: ln, s: s, ready: make(chan net.Conn), failed: make(chan error, 1), done: make(chan struct{})}
}

// Accept returns the next connection that holds a slot.
func (l *limitedListener) Accept() (net.Conn, error) {
	l.start.Do(func() { go l.pump() })
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.failed:
		l.failed <- err // every later Accept fails the same way
		return nil, err
	}
}

// Close stops the listener and the connections waiting for a slot.
func (l *limitedListener) Close() error {
	err := l.Listener.Close()
	l.stop.Do(func() { close(l.done) })
	return err
}

// pump accepts connections and gives each a slot, a place in the queue,
// or a refusal.
func (l *limitedListener) pump() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.failed <- err
			return
		}
		select {
		case l.s.slots <- struct{}{}:
			go l.hand(c)
			continue
		default:
		}
		if l.s.waiting.Add(1) > int64(queuedPerConn*cap(l.s.slots)) {
			l.s.waiting.Add(-1)
			go l.s.turnAway(c, 0)
			continue
		}
		go l.wait(c)
	}
}

// wait holds c until a slot frees, QueueWait passes or the listener closes.
func (l *limitedListener) wait(c net.Conn) {
	defer l.s.waiting.Add(-1)
	start := time.Now()
	timer := time.NewTimer(l.s.cfg.QueueWait)
	defer timer.Stop()
	select {
	case l.s.slots <- struct{}{}:
		l.hand(c)
	case <-timer.C:
		l.s.turnAway(c, time.Since(start))
	case <-l.done:
		c.Close()
	}
}

// hand gives the server c, which holds a slot until it closes.
func (l *limitedListener) hand(c net.Conn) {
	select {
	case l.ready <- &countingConn{Conn: c, s: l.s}:
	case <-l.done:
		<-l.s.slots
		c.Close()
	}
}

// turnAway answers a connection the session's limit leaves no room for,
// after it waited (0: the queue was full too), and closes it. The status
// line says whose limit it is, since clients (npm) show it and not the body.
func (s *Session) turnAway(c net.Conn, waited time.Duration) {
	limit := cap(s.slots)
	why := fmt.Sprintf("this session has %d proxy connections open, wink-mcp's limit (--egress-max-conns %d), and %d more waiting", limit, limit, queuedPerConn*limit)
	if waited > 0 {
		why = fmt.Sprintf("this session has %d proxy connections open, wink-mcp's limit (--egress-max-conns %d), and none closed in the %s this one waited", limit, limit, waited.Round(time.Second))
	}
	remedy := "Close some connections, or ask the user to restart wink-mcp with a larger --egress-max-conns."
	body := "wink-mcp egress proxy refused the connection: " + why + ". " + remedy + "\n"
	s.cfg.Log.Info("egress refused", "event", "egress", "session", s.sessionID(), "allowed", false, "status", 503,
		"reason", strings.TrimSuffix(why, "."), "waited_ms", waited.Milliseconds(), "bytes", 0)
	s.tell(Refusal{Status: http.StatusServiceUnavailable, Reason: why, Remedy: remedy})
	wire.Refuse(c, fmt.Sprintf("HTTP/1.1 503 wink-mcp egress limit --egress-max-conns %d\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", limit, len(body), body))
}

// release gives back the slot a connection held.
func (s *Session) release() { <-s.slots }

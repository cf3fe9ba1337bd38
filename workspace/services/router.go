package services

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Bounds of reading which service a tunnel stream asks for.
const (
	// peekWait bounds the wait for a stream's first bytes; a proxy client
	// speaks first, so only a silent one waits it out, and then goes to
	// the proxy, whose own header timeout applies.
	peekWait = 10 * time.Second
	// dialWait bounds reaching a service's port through its tunnel.
	dialWait = 10 * time.Second
	// MaxConns is how many connections to its services one workspace may
	// have open at once; past it a connection is refused, so a workspace
	// that opens them without end holds no more of the server than that.
	MaxConns = 128
)

// servicePrefix starts a stream that asks for a service (wire.ServiceRequest).
var servicePrefix = strings.SplitN(wire.ServiceRequest, " ", 2)[0] + " "

// Listener returns a listener over the workspace's tunnel streams ln
// accepts that hands on every stream except those asking for a service
// (wire.ServiceRequest), which it carries itself to the named service of
// this workspace, and only to one of its ports: a name that is no service
// of this Room's is refused, so no workspace reaches another's services.
func (r *Room) Listener(ln net.Listener) net.Listener {
	l := &routedListener{Listener: ln, r: r, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.run()
	return l
}

// routedListener is the listener of Room.Listener.
type routedListener struct {
	net.Listener
	r     *Room
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error
}

func (l *routedListener) run() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.err = err
			l.once.Do(func() { close(l.done) })
			return
		}
		go l.route(c)
	}
}

// route reads whether c asks for a service and carries it, or hands it on.
func (l *routedListener) route(c net.Conn) {
	br := bufio.NewReaderSize(c, 512)
	_ = c.SetReadDeadline(time.Now().Add(peekWait))
	head, _ := br.Peek(len(servicePrefix))
	_ = c.SetReadDeadline(time.Time{})
	if string(head) == servicePrefix {
		l.r.carry(c, br)
		return
	}
	select {
	case l.conns <- unread(c, br):
	case <-l.done:
		c.Close()
	}
}

// Accept returns the next stream that asks for no service.
func (l *routedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close closes the tunnel's listener.
func (l *routedListener) Close() error {
	return l.Listener.Close()
}

// peekedConn reads first the bytes read ahead of it, then from its
// stream directly: the proxy's copies take no extra step.
type peekedConn struct {
	net.Conn
	head []byte
}

// unread returns c with what br read ahead of it put back.
func unread(c net.Conn, br *bufio.Reader) net.Conn {
	ahead, _ := br.Peek(br.Buffered())
	return &peekedConn{Conn: c, head: append([]byte(nil), ahead...)}
}

func (p *peekedConn) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// carry answers a stream that asks for a service: it names the service
// and the port, both this workspace's, or is refused with the reason.
func (r *Room) carry(c net.Conn, br *bufio.Reader) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(peekWait))
	line, err := br.ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return
	}
	var name string
	var port int
	if _, err := fmt.Sscanf(line, wire.ServiceRequest, &name, &port); err != nil {
		_, _ = io.WriteString(c, "error: malformed service request\n")
		return
	}
	select {
	case r.conns <- struct{}{}:
		defer func() { <-r.conns }()
	default:
		r.d.Log.Info("service connection refused", "event", "service_refused", "session", r.d.Session(), "service", name, "port", port, "reason", "too many connections")
		_, _ = fmt.Fprintf(c, "error: the workspace has %d connections to its services open, the most it may; close some\n", MaxConns)
		return
	}
	up, err := r.Dial(context.Background(), name, port)
	if err != nil {
		r.d.Log.Info("service connection refused", "event", "service_refused", "session", r.d.Session(), "service", name, "port", port, "err", err)
		_, _ = fmt.Fprintf(c, "error: %v\n", err)
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, wire.ServiceOK); err != nil {
		return
	}
	wire.Splice(unread(c, br), up)
}

// Dial connects to port of the workspace's service name: only a running
// service of this Room's, and only a port it declared.
func (r *Room) Dial(ctx context.Context, name string, port int) (net.Conn, error) {
	svc, err := r.get(name)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(svc.spec.Ports, port) {
		return nil, fmt.Errorf("service %s serves ports %v, not %d", name, svc.spec.Ports, port)
	}
	return dialPort(ctx, svc.c, port)
}

// dialPort opens a stream to port on the loopback of c, through its tunnel
// (a port preview's request, wire.PortRequest).
func dialPort(ctx context.Context, c Container, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialWait)
	defer cancel()
	mux, err := c.Tunnel(ctx)
	if err != nil {
		return nil, fmt.Errorf("reaching the service's container: %w", err)
	}
	st, err := mux.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("the service's tunnel failed: %w", err)
	}
	deadline, _ := ctx.Deadline()
	_ = st.SetDeadline(deadline)
	if _, err := fmt.Fprintf(st, wire.PortRequest, port); err != nil {
		st.Close()
		return nil, err
	}
	answer, err := readLine(st)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("the service did not answer for port %d: %w", port, err)
	}
	if answer != wire.PortOK {
		st.Close()
		return nil, fmt.Errorf("nothing answers on the service's port %d (%s)", port, strings.TrimSpace(strings.TrimPrefix(answer, "error:")))
	}
	_ = st.SetDeadline(time.Time{})
	return st, nil
}

// readLine reads one line of at most 512 bytes, a byte at a time, so
// nothing after it is taken.
func readLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < 512 {
		if _, err := io.ReadFull(r, one); err != nil {
			return "", err
		}
		b = append(b, one[0])
		if one[0] == '\n' {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("an answer longer than 512 bytes")
}

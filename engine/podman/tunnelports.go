//go:build containers_image_openpgp

package podman

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/wire"
)

// portHandovers are the port previews' connections a tunnel's streams
// socket waits for: each one the server asked the agent for, under a
// random token (wire.PortHandRequest), for one port. A descriptor handed
// with a token no request holds is closed unread; one whose socket is not
// a connection from the container's loopback to that port is refused, and
// its request told so.
type portHandovers struct {
	t       *tunnelStreams
	mu      sync.Mutex
	pending map[string]*pendingPort
}

// pendingPort is one request's wait: got receives the connection, or the
// error that refused what came, once.
type pendingPort struct {
	port int
	got  chan portHanded
}

type portHanded struct {
	c   net.Conn
	err error
}

// Expect readies the hand-over of a connection to port (engine.PortHandover).
func (h *portHandovers) Expect(port int) (string, func(context.Context) (net.Conn, error), func()) {
	b := make([]byte, wire.PortTokenLen/2)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	p := &pendingPort{port: port, got: make(chan portHanded, 1)}
	h.mu.Lock()
	if h.pending == nil {
		h.pending = map[string]*pendingPort{}
	}
	h.pending[token] = p
	h.mu.Unlock()
	cancel := func() {
		h.claim(token)
		select {
		case late := <-p.got:
			if late.c != nil {
				late.c.Close()
			}
		default:
		}
	}
	await := func(ctx context.Context) (net.Conn, error) {
		defer cancel()
		select {
		case got := <-p.got:
			return got.c, got.err
		case <-h.t.done:
			return nil, net.ErrClosed
		case <-ctx.Done():
			return nil, fmt.Errorf("the agent's hand-over of port %d: %w", port, ctx.Err())
		}
	}
	return token, await, cancel
}

// claim removes and returns token's request, nil when none holds it.
func (h *portHandovers) claim(token string) *pendingPort {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pending[token]
	delete(h.pending, token)
	return p
}

// take gives c to the request token names when c is a connection from the
// container's loopback to that request's port, and says whether it did;
// else it closes c (nil: what came was not a socket) and tells the
// request why.
func (h *portHandovers) take(c net.Conn, token string) bool {
	p := h.claim(token)
	if p == nil {
		if c != nil {
			c.Close()
		}
		return false
	}
	if c == nil {
		p.got <- portHanded{err: errors.New("the agent handed over something that is not a socket")}
		return false
	}
	tc, ok := c.(*net.TCPConn)
	local, _ := c.LocalAddr().(*net.TCPAddr)
	remote, _ := c.RemoteAddr().(*net.TCPAddr)
	if !ok || local == nil || remote == nil || !local.IP.IsLoopback() || !remote.IP.IsLoopback() || remote.Port != p.port {
		c.Close()
		p.got <- portHanded{err: errors.New("the agent handed over a socket that is not a connection to the port on the container's loopback")}
		return false
	}
	sc, ok := h.t.hold(tc)
	if !ok {
		p.got <- portHanded{err: net.ErrClosed}
		return false
	}
	p.got <- portHanded{c: sc}
	return true
}

var _ engine.PortHandover = (*portHandovers)(nil)

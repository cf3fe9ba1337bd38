//go:build linux

package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/wire"
)

// proxyListenWait is how long a new tunnel waits for the proxy port, which
// the tunnel it supersedes may still hold.
const proxyListenWait = 5 * time.Second

// serveTunnel carries the connections made to the proxy port on the
// container's loopback to the server, a stream each, until the tunnel ends
// or ctx is done. The server decides what each connection may reach; the
// agent only moves bytes. A direct tunnel (the server's socket) is not
// escaped; one over an exec session's streams is. A direct tunnel with a
// nonce hands each connection to the server whole (see streamSockets).
func (a *Agent) serveTunnel(ctx context.Context, in, out *os.File, direct bool, nonce string) error {
	var from io.Reader = in
	if !direct {
		from = wire.UnescapeReader(in)
	}
	conn := struct {
		io.Reader
		io.Writer
		io.Closer
	}{from, out, closerFunc(func() error { return errors.Join(in.Close(), out.Close()) })}
	sess, err := yamux.Client(conn, wire.AgentTunnelConfig())
	if err != nil {
		return fmt.Errorf("starting the tunnel: %w", err)
	}
	defer sess.Close()
	ln, err := listenProxy(ctx)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	go func() {
		<-sess.CloseChan()
		ln.Close()
	}()
	if err := announce(sess); err != nil {
		return err
	}
	var own *streamSockets
	if direct && nonce != "" {
		own = newStreamSockets(nonce)
		defer own.close()
	}
	a.log.Info("egress proxy listening", "addr", ln.Addr().String(), "direct", direct, "hands_over", own != nil)
	go servePorts(sess, own)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || sess.IsClosed() {
				return nil
			}
			return fmt.Errorf("accepting a proxy connection: %w", err)
		}
		go carry(c.(*net.TCPConn), sess, own)
	}
}

// listenProxy listens on the proxy port, waiting for a superseded tunnel
// to let go of it.
func listenProxy(ctx context.Context) (net.Listener, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(wire.ProxyPort))
	deadline := time.Now().Add(proxyListenWait)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("listening on %s for the egress proxy: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// announce tells the server, on the tunnel's first stream, that the proxy
// listens.
func announce(sess *yamux.Session) error {
	st, err := sess.OpenStream()
	if err != nil {
		return fmt.Errorf("announcing the proxy: %w", err)
	}
	defer st.Close()
	if _, err := io.WriteString(st, wire.TunnelReady); err != nil {
		return fmt.Errorf("announcing the proxy: %w", err)
	}
	return nil
}

// carry hands the connection to the server when own is set, the
// connection is a proxy client's (not a service's, from forwardSource)
// and the server takes it, else moves its bytes through a stream of the
// tunnel, each direction closed when its sender is done.
func carry(c *net.TCPConn, sess *yamux.Session, own *streamSockets) {
	defer c.Close()
	if from, ok := c.RemoteAddr().(*net.TCPAddr); own != nil && !(ok && from.IP.Equal(forwardSource)) {
		if err := own.hand(c); err == nil {
			return // the server holds the connection now
		}
	}
	stream, err := sess.OpenStream()
	if err != nil {
		wire.Refuse(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"+
			"wink-mcp egress proxy: the tunnel to the server is down ("+err.Error()+"); try again in a moment.\n")
		return
	}
	defer stream.Close()
	wire.Splice(c, stream)
}

// portDialTimeout bounds connecting to a previewed port in the container.
const portDialTimeout = 5 * time.Second

// servePorts answers the port previews the server opens: each stream names
// a port of the container's loopback, and carries a connection to it, or,
// when the server asks with a token and own is set, hands the connection
// itself to the server (see wire.PortHandRequest).
func servePorts(sess *yamux.Session, own *streamSockets) {
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return
		}
		go servePort(st, own)
	}
}

func servePort(st *yamux.Stream, own *streamSockets) {
	defer st.Close()
	_ = st.SetReadDeadline(time.Now().Add(portDialTimeout))
	port, token, ok := readPortRequest(st)
	if !ok {
		_, _ = io.WriteString(st, "error: malformed port request\n")
		return
	}
	_ = st.SetReadDeadline(time.Time{})
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), portDialTimeout)
	if err != nil {
		_, _ = fmt.Fprintf(st, "error: %v\n", err)
		return
	}
	defer c.Close()
	if token != "" && own != nil {
		if err := own.handPort(c.(*net.TCPConn), token); err == nil {
			_, _ = io.WriteString(st, wire.PortHanded) // the server holds the connection now
			return
		}
	}
	if _, err := io.WriteString(st, wire.PortOK); err != nil {
		return
	}
	wire.Splice(c, st)
}

// readPortRequest reads a port request's line (wire.PortRequest or
// wire.PortHandRequest) and returns its port and token, "" for none.
func readPortRequest(r io.Reader) (port int, token string, ok bool) {
	line, err := bufio.NewReaderSize(io.LimitReader(oneByte{r}, 128), 16).ReadString('\n')
	if err != nil {
		return 0, "", false
	}
	if n, _ := fmt.Sscanf(line, wire.PortHandRequest, &port, &token); n == 2 {
		if len(token) != wire.PortTokenLen || strings.Trim(token, "0123456789abcdef") != "" {
			return 0, "", false
		}
	} else if _, err := fmt.Sscanf(line, wire.PortRequest, &port); err != nil {
		return 0, "", false
	}
	return port, token, port >= 1 && port <= 65535
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

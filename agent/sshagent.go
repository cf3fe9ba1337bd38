//go:build linux

package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// proxyDialTimeout bounds connecting to the egress proxy on the loopback.
const proxyDialTimeout = 10 * time.Second

// serveSSHAgent listens at wire.SSHAgentSocket when the container's
// SSH_AUTH_SOCK names it (the server's --ssh-agent), and carries each
// connection made there to the server's filtering agent through the egress
// proxy. The keys stay with the server: this socket only moves requests.
func (a *Agent) serveSSHAgent(ctx context.Context) {
	if os.Getenv("SSH_AUTH_SOCK") != wire.SSHAgentSocket {
		return
	}
	dir := filepath.Dir(wire.SSHAgentSocket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		a.log.Warn("ssh-agent socket not served", "err", err)
		return
	}
	_ = os.Remove(wire.SSHAgentSocket)
	ln, err := net.Listen("unix", wire.SSHAgentSocket)
	if err != nil {
		a.log.Warn("ssh-agent socket not served", "err", err)
		return
	}
	context.AfterFunc(ctx, func() { ln.Close() })
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := DialThroughProxy(wire.SSHAgentAuthority)
			if err != nil {
				a.log.Warn("ssh-agent connection not carried", "err", err)
				return
			}
			defer up.Close()
			wire.Splice(c, up)
		}()
	}
}

// DialThroughProxy opens a CONNECT to authority (host:port) through the
// session's egress proxy on the container's loopback, and returns the
// connection once the proxy has answered 200; else the proxy's refusal.
func DialThroughProxy(authority string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(wire.ProxyPort)), proxyDialTimeout)
	if err != nil {
		return nil, fmt.Errorf("the egress proxy does not answer on the loopback (is --egress set?): %w", err)
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("reading the egress proxy's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		c.Close()
		return nil, fmt.Errorf("the egress proxy refused %s: %s %s", authority, resp.Status, body)
	}
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// SSHConnect is ssh's ProxyCommand in the containers: it carries its
// standard input and output to host:port through the egress proxy.
func SSHConnect(host, port string, in io.Reader, out io.Writer) error {
	c, err := DialThroughProxy(net.JoinHostPort(host, port))
	if err != nil {
		return err
	}
	defer c.Close()
	go func() {
		_, _ = io.Copy(c, in)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, err = io.Copy(out, c)
	return err
}

// bufferedConn reads what its reader already holds before the conn.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

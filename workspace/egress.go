package workspace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

// tunnelReadyTimeout bounds the wait for the agent's proxy to listen.
const tunnelReadyTimeout = 10 * time.Second

// proxyEnv is the environment that points a container's processes at the
// agent's egress proxy. Package managers (pip, npm, apt, go, git, curl)
// read these; nothing in the container needs a CA or a resolver.
func proxyEnv() map[string]string {
	env := map[string]string{}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env[k] = wire.ProxyURL
	}
	env["NO_PROXY"], env["no_proxy"] = "localhost,127.0.0.1", "localhost,127.0.0.1"
	return env
}

// openTunnelLocked opens the container's egress tunnel, waits until the
// agent's proxy listens (it says so on a first stream), and serves the
// session's proxy on the tunnel's streams until it closes.
func (s *Session) openTunnelLocked(ctx context.Context) error {
	stream, err := s.m.eng.OpenTunnel(ctx, s.name)
	if err != nil {
		return fmt.Errorf("opening the egress tunnel: %w", err)
	}
	var to io.Writer = wire.EscapeWriter(stream)
	path, detail := "exec attach", "the engine's exec session"
	if sock, direct := stream.(engine.SocketTunnel); direct {
		to, path, detail = stream, "socket", sock.ViaSocket()
	}
	conn := struct {
		io.Reader
		io.Writer
		io.Closer
	}{stream, to, stream}
	mux, err := yamux.Server(conn, wire.TunnelConfig())
	if err != nil {
		stream.Close()
		return fmt.Errorf("starting the egress tunnel: %w", err)
	}
	if err := awaitProxy(ctx, mux); err != nil {
		mux.Close()
		return fmt.Errorf("the egress proxy in %s did not start: %w", s.name, err)
	}
	s.tunnel = mux
	// Streams asking for a service go to it; the rest, and the
	// connections the agent hands over whole, to the proxy.
	var conns net.Listener = s.services.Listener(mux)
	s.tunnelPorts = nil
	if sock, direct := stream.(engine.SocketTunnel); direct {
		conns = wire.JoinListeners(conns, sock.Streams())
		s.tunnelPorts = sock.Ports()
	}
	s.m.log.Info("tunnel opened", "session", s.who.hash(), "container", s.name, "path", path, "via", detail)
	if s.proxy == nil {
		go refuseEgress(conns, egressOff(s.setupBase != "", s.profile)) // the tunnel carries port previews only
		return nil
	}
	go func() {
		if err := s.proxy.Serve(conns); err != nil {
			s.m.log.Debug("egress tunnel ended", "session", s.who.hash(), "err", err)
		}
	}()
	return nil
}

// egressOff is the answer to a connection to the proxy of a container
// without egress, a setup's of profile p or a session's: what would give
// it some.
func egressOff(setup bool, p *profiles.Profile) string {
	why := "this workspace has no network; ask the user to start wink-mcp with --egress naming the hosts it needs."
	if setup && p != nil {
		why = "this setup has no network: egress.setup of " + images.ProfileAt(p) + " names no host; add the hosts the setup needs there."
	}
	return "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
		"wink-mcp egress proxy: " + why + "\n"
}

// refuseEgress answers every proxy connection of a tunnel opened for port
// previews in a container without egress with egressOff, as a proxy
// refuses (wire.Refuse: after the request's head, and reading what is left,
// so a connection handed over whole is not reset under its client).
func refuseEgress(conns net.Listener, egressOff string) {
	for {
		c, err := conns.Accept()
		if err != nil {
			return
		}
		go wire.Refuse(c, egressOff)
	}
}

// awaitProxy waits for the agent's first stream, which it opens once its
// proxy listens, and checks what it says.
func awaitProxy(ctx context.Context, mux *yamux.Session) error {
	ctx, cancel := context.WithTimeout(ctx, tunnelReadyTimeout)
	defer cancel()
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		st, err := mux.AcceptStream()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer st.Close()
		_ = st.SetReadDeadline(time.Now().Add(tunnelReadyTimeout))
		line, err := bufio.NewReader(st).ReadString('\n')
		got <- result{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			return r.err
		}
		if r.line != wire.TunnelReady {
			return fmt.Errorf("the agent said %q", r.line)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package workspace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/wire"
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
	conn := struct {
		io.Reader
		io.Writer
		io.Closer
	}{stream, wire.EscapeWriter(stream), stream}
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
	go func() {
		if err := s.proxy.Serve(mux); err != nil {
			s.m.log.Debug("egress tunnel ended", "session", s.hash, "err", err)
		}
	}()
	return nil
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

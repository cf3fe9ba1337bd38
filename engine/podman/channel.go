//go:build containers_image_openpgp

package podman

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/containers/podman/v5/pkg/api/handlers"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	dockerContainer "github.com/docker/docker/api/types/container"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/wire"
)

// channelCloseGrace is how long a closing channel waits for the relay to
// exit by itself before its sockets are cut.
const channelCloseGrace = 2 * time.Second

// OpenChannel starts `wink-mcp relay` in the container with its standard
// streams attached and returns them as one stream to the agent.
//
// Each channel gets a connection of its own: the bindings' attach replaces
// the transport of the connection it uses (see ExecStartAndAttach), which
// must not race with other calls, and a channel must be able to cut its own
// sockets when the relay does not end by itself.
func (e *Engine) OpenChannel(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	return e.openExec(ctx, name, engine.RelayArgv(), nil)
}

// OpenTunnel starts `wink-mcp relay tunnel` in the container, the stream
// that carries the egress proxy's connections (see wire.ProxyPort): over
// the container's socket when it has one (see tunnelsock.go; the stream
// is then an engine.SocketTunnel), else, or when that fails, over the
// exec session's attached streams.
func (e *Engine) OpenTunnel(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	if e.tunnels != nil {
		ln, has, err := e.tunnels.listener(name)
		if has && err == nil {
			var t io.ReadWriteCloser
			if t, err = e.openSocketTunnel(ctx, name, ln); err == nil {
				return t, nil
			}
		}
		if err != nil {
			e.log.Warn("the tunnel's socket failed; it rides the exec attach", "container", name, "err", err)
		}
	}
	return e.openExec(ctx, name, engine.TunnelArgv(), nil)
}

// openSocketTunnel starts the relay that connects to the container's
// socket, and takes its connection; the tunnel's streams socket listens
// before the relay starts.
func (e *Engine) openSocketTunnel(ctx context.Context, name string, ln *net.UnixListener) (io.ReadWriteCloser, error) {
	nonce := newNonce()
	streams, err := listenStreams(e.tunnels.dir(name), nonce)
	if err != nil {
		return nil, err
	}
	streams.serve()
	relay, err := e.openExec(ctx, name, engine.TunnelSocketArgv(), []string{wire.TunnelNonceEnv + "=" + nonce})
	if err != nil {
		streams.Close()
		return nil, err
	}
	conn, err := accept(ctx, ln, nonce)
	if err != nil {
		streams.Close()
		relay.Close()
		return nil, err
	}
	return &socketTunnel{Conn: conn, relay: relay, dir: e.tunnels.dir(name), streams: streams}, nil
}

// openExec runs argv in the container, with env added to its environment,
// its standard streams attached.
func (e *Engine) openExec(ctx context.Context, name string, argv, env []string) (io.ReadWriteCloser, error) {
	if _, err := e.connect(ctx); err != nil {
		return nil, err
	}
	connCtx, err := e.dial(ctx, e.uri)
	if err != nil {
		return nil, fmt.Errorf("%w: opening a channel connection: %v", errUnreachable, err)
	}
	conn, err := bindings.GetClient(connCtx)
	if err != nil {
		return nil, err
	}
	sockets := &socketSet{}
	base, ok := conn.Client.Transport.(*http.Transport)
	if !ok {
		return nil, errors.New("unexpected transport type in the podman bindings")
	}
	dial := base.DialContext
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			sockets.add(c)
		}
		return c, err
	}

	createCtx, end := within(ctx, connCtx, e.apiTimeout)
	execID, err := containers.ExecCreate(createCtx, name, &handlers.ExecCreateConfig{ExecOptions: dockerContainer.ExecOptions{
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          argv,
		Env:          env,
	}})
	end(&err)
	if err != nil {
		sockets.closeAll()
		return nil, fmt.Errorf("creating the channel's exec session in %s: %w", name, err)
	}

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	ch := &podmanChannel{stdin: stdinW, stdout: stdoutR, sockets: sockets, ended: make(chan struct{})}
	var stdout io.Writer = stdoutW
	var stderr io.Writer = &lineLogger{log: e.log, msg: "relay stderr", attrs: []any{"container", name}, level: slog.LevelWarn}
	opts := new(containers.ExecStartAndAttachOptions).
		WithInputStream(*bufio.NewReader(stdinR)).
		WithOutputStream(stdout).
		WithErrorStream(stderr).
		WithAttachInput(true).WithAttachOutput(true).WithAttachError(true)
	go func() {
		err := containers.ExecStartAndAttach(connCtx, execID, opts)
		if err == nil {
			err = io.EOF
		}
		stdoutW.CloseWithError(err)
		// An EOF, not a closed pipe, ends the bindings' stdin copier quietly.
		stdinW.Close()
		close(ch.ended)
		// Exec sessions stay listed on the container until removed; a
		// service too old for the endpoint just keeps them until the container goes.
		rmCtx, cancel := context.WithTimeout(connCtx, e.apiTimeout)
		_ = containers.ExecRemove(rmCtx, execID, nil)
		cancel()
		sockets.closeAll()
		base.CloseIdleConnections()
		conn.Client.CloseIdleConnections()
	}()
	return ch, nil
}

// podmanChannel is the stream to the agent through an attached exec session.
type podmanChannel struct {
	stdin   *io.PipeWriter
	stdout  *io.PipeReader
	sockets *socketSet
	ended   chan struct{}
	once    sync.Once
}

func (c *podmanChannel) Read(p []byte) (int, error)  { return c.stdout.Read(p) }
func (c *podmanChannel) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close closes the relay's stdin, which ends it, and cuts the sockets if it
// has not ended within channelCloseGrace.
func (c *podmanChannel) Close() error {
	c.once.Do(func() {
		c.stdin.Close()
		select {
		case <-c.ended:
		case <-time.After(channelCloseGrace):
			c.sockets.closeAll()
			<-c.ended
		}
	})
	return nil
}

// socketSet remembers the sockets a connection dialled so they can be cut.
type socketSet struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (s *socketSet) add(c net.Conn) {
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

func (s *socketSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

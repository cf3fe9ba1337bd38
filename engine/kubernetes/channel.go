package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/wink-mcp/wink-mcp/engine"
)

// channelCloseGrace is how long a closing channel waits for the relay to
// exit by itself before its stream is cut.
const channelCloseGrace = 2 * time.Second

// OpenChannel starts `wink-mcp relay` in the Pod's workspace container
// over one exec stream and returns its standard streams as one stream to
// the agent. The stream lives until it is closed, and carries every call.
func (e *Engine) OpenChannel(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	return e.openExec(ctx, name, engine.RelayArgv())
}

// OpenTunnel starts `wink-mcp relay tunnel` in the Pod, the stream that
// carries the egress proxy's connections (see wire.ProxyPort).
func (e *Engine) OpenTunnel(ctx context.Context, name string) (io.ReadWriteCloser, error) {
	return e.openExec(ctx, name, engine.TunnelArgv())
}

// openExec runs argv in the Pod's workspace container with its standard
// streams attached, over WebSocket, or SPDY when the API server cannot
// upgrade to WebSocket.
func (e *Engine) openExec(ctx context.Context, name string, argv []string) (io.ReadWriteCloser, error) {
	client, err := e.connect()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	cfg := e.config
	e.mu.Unlock()
	if cfg == nil {
		return nil, errors.New("this engine's client cannot exec")
	}
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.opts.Namespace).Name(name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: workspaceContainer, Command: argv, Stdin: true, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return nil, fmt.Errorf("making the exec client of Pod %s: %w", name, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return nil, fmt.Errorf("making the exec client of Pod %s: %w", name, err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, fmt.Errorf("making the exec client of Pod %s: %w", name, err)
	}
	// The stream outlives ctx, which only bounds the opening.
	streamCtx, cut := context.WithCancel(context.WithoutCancel(ctx))
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	ch := &execChannel{stdin: stdinW, stdout: stdoutR, cut: cut, ended: make(chan struct{})}
	stderr := &lineLogger{log: e.log, attrs: []any{"pod", name}}
	go func() {
		err := exec.StreamWithContext(streamCtx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: stdoutW, Stderr: stderr})
		if err == nil {
			err = io.EOF
		}
		stdoutW.CloseWithError(err)
		stdinR.CloseWithError(io.EOF)
		close(ch.ended)
		cut()
	}()
	return ch, nil
}

// execChannel is the stream to the agent through an exec stream.
type execChannel struct {
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	cut    context.CancelFunc
	ended  chan struct{}
	once   sync.Once
}

func (c *execChannel) Read(p []byte) (int, error)  { return c.stdout.Read(p) }
func (c *execChannel) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close closes the relay's stdin, which ends it, and cuts the stream if it
// has not ended within channelCloseGrace.
func (c *execChannel) Close() error {
	c.once.Do(func() {
		c.stdin.Close()
		select {
		case <-c.ended:
		case <-time.After(channelCloseGrace):
			c.cut()
			<-c.ended
		}
	})
	return nil
}

// maxStderrLine bounds what lineLogger holds of a line without its end: a
// relay that writes no newline must not grow the server's memory.
const maxStderrLine = 4096

// lineLogger logs what the relay writes to its stderr, a line at a time,
// and a line longer than maxStderrLine in pieces of that size.
type lineLogger struct {
	log   *slog.Logger
	attrs []any
	mu    sync.Mutex
	buf   strings.Builder
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		s := l.buf.String()
		i := strings.IndexByte(s, '\n')
		next := i + 1
		if i < 0 || i > maxStderrLine {
			if len(s) <= maxStderrLine {
				return len(p), nil
			}
			i, next = maxStderrLine, maxStderrLine
		}
		l.log.Warn("relay stderr", append([]any{"line", s[:i]}, l.attrs...)...)
		l.buf.Reset()
		l.buf.WriteString(s[next:])
	}
}

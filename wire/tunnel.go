package wire

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"time"

	"github.com/hashicorp/yamux"
)

// The tunnel is a second channel between the server and the agent that
// carries TCP connections instead of requests: the agent opens a stream for
// each connection made to its proxy on the container's loopback (see
// ProxyPort), and the server answers it as an HTTP proxy. Streams are
// multiplexed with yamux, which gives each one its own flow-control window,
// so a download never holds up another connection.
//
// Podman's attach watches the stream into the container for its detach
// keys (ctrl-p, ctrl-q), so the server escapes the bytes it sends
// (EscapeWriter) and the agent restores them (UnescapeReader). The stream
// out of the container is passed through as it is.

// ProxyPort is the port of the container's loopback on which the agent
// serves the egress proxy.
const ProxyPort = 3128

// A port preview is a stream the server opens: it writes PortRequest with
// the container port, and the agent answers PortOK, or "error: " and why,
// on one line, then carries the connection.
const (
	PortRequest = "port %d\n"
	PortOK      = "ok\n"
)

// Over the socket (below) the server asks for a port preview's
// connection whole instead: PortHandRequest names the port and a token of
// PortTokenLen hex digits; the agent connects to the port, sends the
// connection's descriptor on the tunnel's streams socket with
// PortHandTag and the token as the message's bytes, and answers
// PortHanded on the stream. When it cannot hand the connection over it
// answers PortOK and carries it on the stream as before.
const (
	PortHandRequest = "port %d hand %s\n"
	PortHanded      = "handed\n"
	PortHandTag     = 'p'
	PortTokenLen    = 32
)

// On a local Podman the tunnel may instead ride a Unix socket the server
// listens on, in a directory of its own bind-mounted read-only into the
// container at TunnelSocketDir: the relay connects to it, writes
// TunnelSocketHello with the nonce the server gave it in TunnelNonceEnv,
// and hands the connection to the agent. Nothing filters that stream, so
// neither side escapes it.
const (
	TunnelSocketDir   = "/run/wink-tunnel"
	TunnelSocketPath  = TunnelSocketDir + "/tunnel.sock"
	TunnelNonceEnv    = "WINK_TUNNEL_NONCE"
	TunnelSocketHello = "wink-tunnel %s\n"
)

// Over the socket each proxied connection is also handed to the server
// whole rather than carried as a stream multiplexed on the tunnel: the
// server listens, for each tunnel, on the socket TunnelStreamsPath names
// (in the same directory); the agent connects to it once, writes
// TunnelStreamHello with the tunnel's nonce, and then sends the
// descriptor of each connection made to its proxy (SCM_RIGHTS, one a
// message). The server reads and writes the client's socket itself, so
// the bytes cross no process between the server and the client. The
// tunnel itself still carries the agent's announcement, port previews,
// and any connection the server does not take.
const TunnelStreamHello = "wink-stream %s\n"

// TunnelStreamsPath is where, in the container, the server listens for
// the connections of the tunnel whose nonce is nonce: a name of its own
// per tunnel, so a tunnel that supersedes another never takes over its
// socket.
func TunnelStreamsPath(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return TunnelSocketDir + "/streams-" + hex.EncodeToString(sum[:8]) + ".sock"
}

// TunnelReady is what the agent writes on a tunnel's first stream once
// its proxy listens.
const TunnelReady = "ready\n"

// ProxyURL is the proxy as the container's processes are told of it.
const ProxyURL = "http://127.0.0.1:3128"

// escape bytes: escapeByte introduces an escaped byte, which follows as
// its value xor escapeMask. Neither 0x10 (ctrl-p) nor escapeByte itself
// appears unescaped on the wire.
const (
	ctrlP      = 0x10
	escapeByte = 0x1b
	escapeMask = 0x40
)

// EscapeWriter returns a writer that escapes what it writes to w so that no
// ctrl-p reaches Podman's detach-key filter. It is not safe for concurrent
// use (yamux writes from one goroutine).
func EscapeWriter(w io.Writer) io.Writer { return &escapeWriter{w: w} }

type escapeWriter struct {
	w   io.Writer
	buf []byte
}

func (e *escapeWriter) Write(p []byte) (int, error) {
	e.buf = e.buf[:0]
	rest := p
	for len(rest) > 0 {
		i := indexSpecial(rest)
		if i < 0 {
			e.buf = append(e.buf, rest...)
			break
		}
		e.buf = append(e.buf, rest[:i]...)
		e.buf = append(e.buf, escapeByte, rest[i]^escapeMask)
		rest = rest[i+1:]
	}
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// indexSpecial returns the index of the first byte that must be escaped,
// or -1.
func indexSpecial(b []byte) int {
	i, j := bytes.IndexByte(b, ctrlP), bytes.IndexByte(b, escapeByte)
	switch {
	case i < 0:
		return j
	case j < 0 || i < j:
		return i
	default:
		return j
	}
}

// ErrBadEscape reports a stream that an EscapeWriter did not write.
var ErrBadEscape = errors.New("tunnel: malformed escape")

// UnescapeReader returns a reader of what an EscapeWriter wrote to r.
func UnescapeReader(r io.Reader) io.Reader { return &unescapeReader{r: r} }

type unescapeReader struct {
	r io.Reader
	// pending is an escape byte that ended the last read, whose escaped
	// byte has not arrived yet.
	pending bool
}

// Read reads what is there and undoes the escapes in place: the result is
// never longer than what was read.
func (u *unescapeReader) Read(p []byte) (int, error) {
	for {
		n, err := u.r.Read(p)
		out, bad := u.unescape(p[:n])
		if bad {
			return out, ErrBadEscape
		}
		if err != nil {
			if err == io.EOF && u.pending {
				return out, ErrBadEscape
			}
			return out, err
		}
		if out > 0 || n == 0 {
			return out, nil
		}
		// Only a trailing escape byte came: read on.
	}
}

// unescape rewrites b in place and returns the length of the result.
func (u *unescapeReader) unescape(b []byte) (int, bool) {
	w, r := 0, 0
	if u.pending && len(b) > 0 {
		if !restorable(b[0] ^ escapeMask) {
			return 0, true
		}
		b[0] ^= escapeMask
		u.pending = false
		w, r = 1, 1
	}
	for r < len(b) {
		i := indexSpecial(b[r:])
		if i < 0 {
			w += copy(b[w:], b[r:])
			break
		}
		w += copy(b[w:], b[r:r+i])
		r += i
		if b[r] == ctrlP {
			return w, true
		}
		if r+1 == len(b) {
			u.pending = true
			break
		}
		if !restorable(b[r+1] ^ escapeMask) {
			return w, true
		}
		b[w] = b[r+1] ^ escapeMask
		w++
		r += 2
	}
	return w, false
}

func restorable(b byte) bool { return b == ctrlP || b == escapeByte }

// Splice carries bytes both ways between a and b until both directions are
// done; when one side stops sending, the other's write side is closed
// (CloseWrite where it has one, else Close: a yamux stream's Close is a
// half-close), so each end sees the end of what the other sent.
func Splice(a, b io.ReadWriter) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = copyLarge(a, b)
		closeWrite(a)
	}()
	_ = copyLarge(b, a)
	closeWrite(b)
	<-done
}

// spliceBuffer is the size of Splice's copies: a download moves in
// frames this large rather than io.Copy's 32 KiB, fewer frames and
// system calls for the same bytes.
const spliceBuffer = 256 << 10

// copyLarge copies src to dst through a spliceBuffer of its own, never
// a ReadFrom or WriteTo that would choose a smaller one.
func copyLarge(dst io.Writer, src io.Reader) error {
	buf := make([]byte, spliceBuffer)
	_, err := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, buf)
	return err
}

func closeWrite(w io.Writer) {
	switch c := w.(type) {
	case interface{ CloseWrite() error }:
		_ = c.CloseWrite()
	case io.Closer:
		_ = c.Close()
	}
}

// lingerBytes and lingerTime bound what CloseGently reads and waits.
const (
	lingerBytes = 256 << 10
	lingerTime  = 2 * time.Second
)

// Refuse answers an HTTP connection with response (a refusal page) and
// closes it, as a client expects: it waits, for a moment, for the
// request's head before answering (an answer before the request confuses
// clients, Go's among them), then ends the write side and reads and drops
// what the client still sends before closing (closing with unread bytes
// makes the kernel reset the connection, and the client could lose the
// answer).
func Refuse(c net.Conn, response string) {
	_ = c.SetDeadline(time.Now().Add(lingerTime))
	head := bufio.NewReaderSize(io.LimitReader(c, lingerBytes), 4096)
	for {
		line, err := head.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) || len(bytes.TrimRight(line, "\r\n")) == 0 {
			break
		}
	}
	_, _ = io.WriteString(c, response)
	closeWrite(c)
	_, _ = io.Copy(io.Discard, head)
	_ = c.Close()
}

// TunnelConfig is the yamux configuration of both ends of a tunnel.
func TunnelConfig() *yamux.Config {
	return tunnelConfig(1 << 20)
}

// AgentTunnelConfig is TunnelConfig for the agent's end, which receives
// the downloads: a 16 MiB window, so that a stream is not held back by
// the window on the socket path (the server's end keeps 1 MiB: what a
// container sends it can make the server hold, per stream).
func AgentTunnelConfig() *yamux.Config { return tunnelConfig(16 << 20) }

func tunnelConfig(window uint32) *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = io.Discard
	c.EnableKeepAlive = true
	c.KeepAliveInterval = 15 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.MaxStreamWindowSize = window
	c.AcceptBacklog = 512
	return c
}

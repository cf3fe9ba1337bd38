package wire

import (
	"bufio"
	"errors"
	"io"
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
// ctrl-p reaches Podman's detach-key filter.
func EscapeWriter(w io.Writer) io.Writer { return &escapeWriter{w: w} }

type escapeWriter struct {
	w   io.Writer
	buf []byte
}

func (e *escapeWriter) Write(p []byte) (int, error) {
	e.buf = e.buf[:0]
	for _, b := range p {
		if b == ctrlP || b == escapeByte {
			e.buf = append(e.buf, escapeByte, b^escapeMask)
			continue
		}
		e.buf = append(e.buf, b)
	}
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ErrBadEscape reports a stream that an EscapeWriter did not write.
var ErrBadEscape = errors.New("tunnel: malformed escape")

// UnescapeReader returns a reader of what an EscapeWriter wrote to r.
func UnescapeReader(r io.Reader) io.Reader { return &unescapeReader{r: bufio.NewReaderSize(r, 64<<10)} }

type unescapeReader struct{ r *bufio.Reader }

func (u *unescapeReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if n > 0 && u.r.Buffered() == 0 {
			break // hand over what is here rather than wait for more
		}
		b, err := u.r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if b == escapeByte {
			if b, err = u.r.ReadByte(); err != nil {
				return n, ErrBadEscape
			}
			b ^= escapeMask
			if b != ctrlP && b != escapeByte {
				return n, ErrBadEscape
			}
		} else if b == ctrlP {
			return n, ErrBadEscape
		}
		p[n] = b
		n++
	}
	return n, nil
}

// TunnelConfig is the yamux configuration of both ends of a tunnel.
func TunnelConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = io.Discard
	c.EnableKeepAlive = true
	c.KeepAliveInterval = 15 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.MaxStreamWindowSize = 1 << 20
	c.AcceptBacklog = 512
	return c
}

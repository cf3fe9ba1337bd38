package ports

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/wire"
)

// fakeHandover stands for the engine's: Expect hands out tokens, and
// await returns what the test put for the port.
type fakeHandover struct {
	mu        sync.Mutex
	give      map[int]net.Conn // nil: the hand-over was refused
	expected  int
	cancelled int
}

func (h *fakeHandover) Expect(port int) (string, func(context.Context) (net.Conn, error), func()) {
	h.mu.Lock()
	h.expected++
	h.mu.Unlock()
	await := func(context.Context) (net.Conn, error) {
		if c := h.give[port]; c != nil {
			return c, nil
		}
		return nil, errors.New("the agent handed over a socket that is not a connection to the port")
	}
	return strings.Repeat("ab", wire.PortTokenLen/2), await, func() {
		h.mu.Lock()
		h.cancelled++
		h.mu.Unlock()
	}
}

// fakeAgent answers the port requests on mux's other end as answers says
// for each request line, then echoes what comes on the stream.
func fakeAgent(t *testing.T, answers map[string]string) *yamux.Session {
	t.Helper()
	a, b := net.Pipe()
	server, err := yamux.Server(a, yamux.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	client, err := yamux.Client(b, yamux.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	go func() {
		for {
			st, err := client.AcceptStream()
			if err != nil {
				return
			}
			go func() {
				defer st.Close()
				line, err := bufio.NewReader(io.LimitReader(oneByteReader{st}, 128)).ReadString('\n')
				if err != nil {
					return
				}
				answer, ok := answers[line]
				if !ok {
					answer = "error: unexpected request " + strings.TrimSpace(line) + "\n"
				}
				if _, err := io.WriteString(st, answer); err != nil || answer != wire.PortOK {
					return
				}
				_, _ = io.Copy(st, st)
			}()
		}
	}()
	return server
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

// dialPort takes the handed connection when it comes, asks again on a
// stream when the hand-over was refused or the agent carried it itself,
// and maps an agent's error to the page saying nothing answers; every
// token is forgotten after.
func TestDialPortHandover(t *testing.T) {
	token := strings.Repeat("ab", wire.PortTokenLen/2)
	hand := func(port string) string { return "port " + port + " hand " + token + "\n" }
	mux := fakeAgent(t, map[string]string{
		hand("1"): wire.PortHanded, "port 1\n": wire.PortOK, // refused: asked again
		hand("2"): wire.PortHanded, // handed
		hand("3"): wire.PortOK,     // carried on the stream
		hand("4"): "error: dial tcp 127.0.0.1:4: connection refused\n",
	})
	handed, other := net.Pipe()
	defer handed.Close()
	defer other.Close()
	h := &fakeHandover{give: map[int]net.Conn{2: handed}}
	r := New(Deps{
		Tunnel:   func(context.Context) (*yamux.Session, error) { return mux, nil },
		Handover: func(*yamux.Session) Handover { return h },
		Life:     context.Background(),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Session:  func() string { return "test" },
		Closed:   errTestClosed,
	})
	echoes := func(c net.Conn) bool {
		if _, err := io.WriteString(c, "hi"); err != nil {
			return false
		}
		got := make([]byte, 2)
		_, err := io.ReadFull(c, got)
		return err == nil && string(got) == "hi"
	}
	for _, port := range []int{1, 3} {
		c, err := r.dialPort(port)
		if err != nil || !echoes(c) {
			t.Errorf("port %d: %v; want a stream of the tunnel", port, err)
		}
		if c != nil {
			c.Close()
		}
	}
	if c, err := r.dialPort(2); err != nil || c != handed {
		t.Errorf("port 2: %v %v; want the handed connection", c, err)
	}
	var pe *portError
	if _, err := r.dialPort(4); !errors.As(err, &pe) || pe.status != http.StatusBadGateway || !strings.Contains(pe.text, "nothing answers on port 4") {
		t.Errorf("port 4: %v; want the 502 page saying nothing answers", err)
	}
	if h.expected != 4 || h.cancelled != 4 {
		t.Errorf("%d tokens handed out, %d forgotten; want 4 and 4", h.expected, h.cancelled)
	}
}

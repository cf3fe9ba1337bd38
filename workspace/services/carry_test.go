package services

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/wink-mcp/wink-mcp/wire"
	"github.com/wink-mcp/wink-mcp/workspace/jobs"
)

// echoContainer is a service container whose tunnel is a real yamux
// session: its agent's end answers each port request with ok and echoes
// what the stream carries, upper-cased, as a service on that port would.
type echoContainer struct{ mux *yamux.Session }

func newEchoContainer(t *testing.T) *echoContainer {
	server, agent := net.Pipe()
	mux, err := yamux.Client(server, wire.TunnelConfig())
	if err != nil {
		t.Fatal(err)
	}
	agentMux, err := yamux.Server(agent, wire.TunnelConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mux.Close(); agentMux.Close() })
	go func() {
		for {
			st, err := agentMux.AcceptStream()
			if err != nil {
				return
			}
			go func() {
				defer st.Close()
				br := bufio.NewReader(st)
				var port int
				if _, err := fmt.Fscanf(br, wire.PortRequest, &port); err != nil {
					return
				}
				_, _ = io.WriteString(st, wire.PortOK)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = io.WriteString(st, strings.ToUpper(line))
				}
			}()
		}
	}()
	return &echoContainer{mux: mux}
}

func (e *echoContainer) StartJob(context.Context, jobs.Request) (wire.JobStartResult, error) {
	return wire.JobStartResult{Job: wire.JobInfo{ID: "j1", State: wire.JobRunning}}, nil
}
func (e *echoContainer) JobStatus(context.Context, string) (wire.JobInfo, error) {
	return wire.JobInfo{ID: "j1", State: wire.JobRunning}, nil
}
func (e *echoContainer) JobOutput(context.Context, wire.JobOutputArgs) (wire.JobOutputResult, error) {
	return wire.JobOutputResult{}, nil
}
func (e *echoContainer) Run(context.Context, []string, time.Duration) (int, string, error) {
	return 0, "", nil
}
func (e *echoContainer) Tunnel(context.Context) (*yamux.Session, error) { return e.mux, nil }
func (e *echoContainer) Name() string                                   { return "echo" }
func (e *echoContainer) End(context.Context)                            {}

// A workspace's connection to its service carries bytes both ways once the
// server says ok; past MaxConns open ones, the next is refused with the
// reason and the open ones go on.
func TestServiceConnectionsCarryAndAreBounded(t *testing.T) {
	echo := newEchoContainer(t)
	room := New(Deps{
		Make: func(context.Context, Spec) (Container, error) { return echo, nil },
		Call: func(context.Context, string, any, any) error { return nil },
		Log:  slog.New(slog.DiscardHandler), Session: func() string { return "s" },
	})
	if _, err := room.Start(context.Background(), Spec{Name: "echo", Profile: "p", Command: []string{"echo"}, Ports: []int{7000},
		Ready: Ready{Port: 7000, Timeout: 5 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	under := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	ln := room.Listener(under)
	defer ln.Close()

	open := func() (net.Conn, *bufio.Reader, string) {
		c := under.dial()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = fmt.Fprintf(c, wire.ServiceRequest, "echo", 7000)
		br := bufio.NewReader(c)
		answer, _ := br.ReadString('\n')
		return c, br, answer
	}
	var held []net.Conn
	for i := range MaxConns {
		c, br, answer := open()
		if answer != wire.ServiceOK {
			t.Fatalf("connection %d: %q", i, answer)
		}
		_, _ = io.WriteString(c, "hello\n")
		if got, _ := br.ReadString('\n'); got != "HELLO\n" {
			t.Fatalf("connection %d carried %q", i, got)
		}
		held = append(held, c)
	}
	c, _, answer := open()
	c.Close()
	if !strings.HasPrefix(answer, "error: the workspace has 128 connections to its services open") {
		t.Errorf("connection past MaxConns: %q", answer)
	}
	held[0].Close()
	waitFor := time.Now().Add(5 * time.Second)
	for {
		c, _, answer := open()
		c.Close()
		if answer == wire.ServiceOK {
			break
		}
		if time.Now().After(waitFor) {
			t.Fatalf("no place once one connection closed: %q", answer)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range held[1:] {
		c.Close()
	}
}

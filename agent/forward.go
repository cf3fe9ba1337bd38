//go:build linux

package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// forwardDialTimeout bounds reaching the agent's own proxy port and the
// server's answer for one service connection.
const forwardDialTimeout = 10 * time.Second

// forwardSource is the address service connections come from to the
// proxy port: carry keeps them on the tunnel's streams, where the server
// routes a service request, rather than handing them to the server as a
// proxy connection. Another process may connect from it too; its
// connection then only takes the slower path, checked the same way.
var forwardSource = net.IPv4(127, 0, 0, 2)

// forwards are the ports of the container's loopback on which services
// beside the workspace answer (wire.OpServiceForward): each connection
// goes to the agent's proxy port, names its service on the first line,
// and from the server's "ok" on carries raw TCP. The server decides what
// the name reaches; the agent only moves bytes.
type forwards struct {
	mu  sync.Mutex
	lns map[int]net.Listener
}

// forward listens on args.Port for args.Service's args.ServicePort,
// replacing an earlier forward of that port.
func (f *forwards) forward(args wire.ServiceForwardArgs) (*wire.ServiceForwardResult, *wire.Error) {
	if args.Port < 1 || args.Port > 65535 || args.ServicePort < 1 || args.ServicePort > 65535 || args.Service == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "a service forward needs a port, a service and its port; got %+v", args)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old := f.lns[args.Port]; old != nil {
		old.Close()
		delete(f.lns, args.Port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(args.Port)))
	if err != nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "listening on 127.0.0.1:%d for service %s: %v", args.Port, args.Service, err)
	}
	if f.lns == nil {
		f.lns = map[int]net.Listener{}
	}
	f.lns[args.Port] = ln
	request := fmt.Sprintf(wire.ServiceRequest, args.Service, args.ServicePort)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go carryToService(c, request)
		}
	}()
	return &wire.ServiceForwardResult{Listening: true}, nil
}

// unforward stops listening on args.Port; connections already carried go on.
func (f *forwards) unforward(args wire.ServiceForwardArgs) (*wire.ServiceForwardResult, *wire.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ln := f.lns[args.Port]; ln != nil {
		ln.Close()
		delete(f.lns, args.Port)
	}
	return &wire.ServiceForwardResult{}, nil
}

// carryToService carries one connection through the proxy port to the
// service request names; a refusal closes it.
func carryToService(c net.Conn, request string) {
	defer c.Close()
	dialer := net.Dialer{Timeout: forwardDialTimeout, LocalAddr: &net.TCPAddr{IP: forwardSource}}
	up, err := dialer.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(wire.ProxyPort)))
	if err != nil {
		return
	}
	defer up.Close()
	_ = up.SetDeadline(time.Now().Add(forwardDialTimeout))
	if _, err := io.WriteString(up, request); err != nil {
		return
	}
	// One byte at a time, so that nothing after the answer's line is
	// taken from the connection.
	answer, err := bufio.NewReaderSize(io.LimitReader(oneByte{up}, 512), 16).ReadString('\n')
	if err != nil || answer != wire.ServiceOK {
		return
	}
	_ = up.SetDeadline(time.Time{})
	wire.Splice(c, up)
}

// oneByte reads at most one byte per Read.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

package mcpgoadapt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// stdioSessionID names the one session of a stdio connection.
const stdioSessionID = "stdio"

// stdioSession is the MCP session of a stdio connection: what mcp-go asks
// of a session (client info, notifications), and the server's own requests
// to the client (roots/list) with their answers.
type stdioSession struct {
	out           *lineWriter
	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
	clientInfo    atomic.Value // mcp.Implementation
	capabilities  atomic.Value // mcp.ClientCapabilities
	version       atomic.Value // string
	logLevel      atomic.Value // mcp.LoggingLevel, set by logging/setLevel

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan clientAnswer // the server's requests awaiting the client's answer
}

// clientAnswer is the client's answer to a request the server made.
type clientAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// clientAnswer returns the answer to a request of the server's that the
// message carries; it fails when its error is not a JSON-RPC error object.
func (h *Head) clientAnswer() (clientAnswer, error) {
	a := clientAnswer{Result: h.Result}
	if len(h.Error) > 0 {
		if err := json.Unmarshal(h.Error, &a.Error); err != nil {
			return clientAnswer{}, fmt.Errorf("decoding the error of an answer: %w", err)
		}
	}
	return a, nil
}

func newStdioSession(out *lineWriter) *stdioSession {
	return &stdioSession{out: out, notifications: make(chan mcp.JSONRPCNotification, 100), pending: map[int64]chan clientAnswer{}}
}

// SessionID implements mcpserver.ClientSession.
func (s *stdioSession) SessionID() string { return stdioSessionID }

// NotificationChannel implements mcpserver.ClientSession.
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

// Initialize implements mcpserver.ClientSession.
func (s *stdioSession) Initialize() { s.initialized.Store(true) }

// SetLogLevel implements mcpserver.SessionWithLogging.
func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) { s.logLevel.Store(level) }

// GetLogLevel implements mcpserver.SessionWithLogging: the level set, else
// error (nothing is sent to a client that set none; see clientLogs).
func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	if l, ok := s.logLevel.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

var _ mcpserver.SessionWithLogging = (*stdioSession)(nil)

// IsStdio reports whether session is the session of a stdio connection
// ServeStdio serves.
func IsStdio(session mcpserver.ClientSession) bool {
	_, ok := session.(*stdioSession)
	return ok
}

// Initialized implements mcpserver.ClientSession.
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

// GetClientInfo implements mcpserver.SessionWithClientInfo.
func (s *stdioSession) GetClientInfo() mcp.Implementation {
	v, _ := s.clientInfo.Load().(mcp.Implementation)
	return v
}

// SetClientInfo implements mcpserver.SessionWithClientInfo.
func (s *stdioSession) SetClientInfo(info mcp.Implementation) { s.clientInfo.Store(info) }

// GetClientCapabilities implements mcpserver.SessionWithClientInfo.
func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities {
	v, _ := s.capabilities.Load().(mcp.ClientCapabilities)
	return v
}

// SetClientCapabilities implements mcpserver.SessionWithClientInfo.
func (s *stdioSession) SetClientCapabilities(c mcp.ClientCapabilities) { s.capabilities.Store(c) }

// ProtocolVersion implements mcpserver.SessionWithProtocolVersion.
func (s *stdioSession) ProtocolVersion() string {
	v, _ := s.version.Load().(string)
	return v
}

// SetProtocolVersion records the negotiated protocol version.
func (s *stdioSession) SetProtocolVersion(v string) { s.version.Store(v) }

// ListRoots implements mcpserver.SessionWithRoots: it asks the client for
// its roots and waits for the answer or ctx.
func (s *stdioSession) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	raw, err := s.request(ctx, string(mcp.MethodListRoots), nil)
	if err != nil {
		return nil, err
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the client's answer to roots/list is not a list of roots: %w", err)
	}
	return &res, nil
}

// RequestElicitation implements mcpserver.SessionWithElicitation: it asks
// the client's user and waits for the answer or ctx.
func (s *stdioSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, err := s.request(ctx, string(mcp.MethodElicitationCreate), req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the client's answer to elicitation/create is not an elicitation result: %w", err)
	}
	return &res, nil
}

// request sends the client a request with params (nil for none) and
// returns its result.
func (s *stdioSession) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := s.nextID.Add(1)
	answer := make(chan clientAnswer, 1)
	s.mu.Lock()
	s.pending[id] = answer
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	msg := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{mcp.JSONRPC_VERSION, id, method, params}
	if err := s.out.write(msg); err != nil {
		return nil, fmt.Errorf("sending %s to the client: %w", method, err)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case a := <-answer:
		if a.Error != nil {
			return nil, fmt.Errorf("the client answered %s with error %d: %s", method, a.Error.Code, a.Error.Message)
		}
		if a.Result == nil {
			return nil, errors.New("the client answered " + method + " with neither a result nor an error")
		}
		return a.Result, nil
	}
}

// answer routes the client's answer to the request with that id; it
// reports false when no such request is waiting.
func (s *stdioSession) answer(id json.RawMessage, a clientAnswer) bool {
	var n int64
	if json.Unmarshal(id, &n) != nil {
		return false
	}
	s.mu.Lock()
	ch, ok := s.pending[n]
	s.mu.Unlock()
	if ok {
		select {
		case ch <- a:
		default: // answered twice: the first answer stands
		}
	}
	return ok
}

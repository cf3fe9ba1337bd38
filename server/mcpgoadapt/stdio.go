package mcpgoadapt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// MaxStdioInflight caps the requests a stdio client may have in flight;
// past it a request is answered at once with an error.
const MaxStdioInflight = 256

// tokenAliasLife is how long a progress token's alias outlives its call,
// for notifications still on their way out.
const tokenAliasLife = time.Minute

// stdioConn serves the messages of one stdio client.
type stdioConn struct {
	mcp   *mcpserver.MCPServer
	log   *slog.Logger
	out   *lineWriter
	sess  *stdioSession
	max   int64
	alias string // prefix of the aliases of ids mcp-go would change
	// requestContext, if set, makes the context each request is served with.
	requestContext func(context.Context) context.Context
	// intercept, if set, may answer a request in place of mcp-go.
	intercept Interceptor
	n         atomic.Int64
	calls     sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]*stdioCall      // by idKey of the id as the client wrote it
	tokens   map[string]json.RawMessage // progress-token alias -> the token as written
}

// stdioCall is a request in flight.
type stdioCall struct {
	cancel    context.CancelFunc
	cancelled atomic.Bool
}

// ServeStdio serves srv's one stdio session over in and out until in ends
// or ctx is done. It replaces mcp-go's StdioServer (see the package doc):
// only JSON-RPC is written to out; each request is served as soon as it is
// read, however many are in flight (up to MaxStdioInflight); a line over max
// bytes is answered with an error and skipped; ids come back exactly as the
// client wrote them. requestContext, if set, makes the context each request
// is served with; intercept, if set, may answer a request in place of srv.
func ServeStdio(ctx context.Context, srv *mcpserver.MCPServer, in io.Reader, out io.Writer, max int64, log *slog.Logger,
	requestContext func(context.Context) context.Context, intercept Interceptor) error {
	w := &lineWriter{w: out}
	c := &stdioConn{mcp: srv, log: log, out: w, sess: newStdioSession(w), max: max, requestContext: requestContext, intercept: intercept,
		alias: newAliasPrefix(), inflight: map[string]*stdioCall{}, tokens: map[string]json.RawMessage{}}
	if err := srv.RegisterSession(ctx, c.sess); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	defer srv.UnregisterSession(ctx, stdioSessionID)
	served, stop := context.WithCancel(srv.WithContext(ctx, c.sess))
	notified := make(chan struct{})
	go c.notify(served, notified)
	err := c.read(served, newLineReader(in, max))
	stop() // the client is gone, or the server is stopping: its calls end
	c.calls.Wait()
	<-notified
	return err
}

// read serves each line the client sends until its input ends.
func (c *stdioConn) read(ctx context.Context, lines *lineReader) error {
	type read struct {
		line stdioLine
		err  error
	}
	next := make(chan read)
	go func() {
		for {
			line, err := lines.next()
			select {
			case next <- read{line, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-next:
			if r.err != nil {
				return r.err
			}
			if err := c.handle(ctx, r.line); err != nil {
				return err
			}
		}
	}
}

// handle serves one line: a request starts at once on its own goroutine.
// Only a failure to write to the client is returned.
func (c *stdioConn) handle(ctx context.Context, line stdioLine) error {
	if line.overLimit() {
		id := overlongID(line.head, line.tail)
		return c.reply(id, mcp.INVALID_REQUEST, fmt.Sprintf("the message is %d bytes, over the limit of %d bytes (--max-body, WINK_MAX_BODY), "+
			"so it was not read; send less in one message (a large file in parts, joined with podman_shell) or raise the limit", line.size, c.max))
	}
	data := bytes.TrimSpace(line.data)
	if len(data) == 0 {
		return nil
	}
	head, err := DecodeHead(data)
	var answer clientAnswer
	if err == nil {
		answer, err = head.clientAnswer()
	}
	if err != nil {
		return c.reply(nil, mcp.PARSE_ERROR, "a line is not a JSON-RPC message: send one JSON object per line")
	}
	if string(head.ID) == "null" {
		head.ID = nil
	}
	switch {
	case head.Method == nil:
		if head.ID == nil || !c.sess.answer(head.ID, answer) {
			c.log.Warn("a message from the client is neither a request, a notification nor an answer to a request of ours; it is ignored", "id", string(head.ID))
		}
		return nil
	case head.ID == nil && *head.Method == string(mcp.MethodNotificationCancelled):
		c.cancel(member(data, "params", "requestId"))
		return nil
	case head.ID == nil:
		if resp := c.mcp.HandleMessage(ctx, data); resp != nil {
			return c.out.write(resp)
		}
		return nil
	case !validID(head.ID):
		return c.reply(nil, mcp.INVALID_REQUEST, "the id of a request must be a string or a number, not "+string(head.ID))
	}
	return c.start(ctx, head, data)
}

// start serves a request on its own goroutine, under an alias of its id
// and progress token when mcp-go would change them, with its head in the
// context it is served with.
func (c *stdioConn) start(ctx context.Context, head *Head, msg json.RawMessage) error {
	id := head.ID
	key := idKey(id)
	c.mu.Lock()
	_, taken := c.inflight[key]
	full := len(c.inflight) >= MaxStdioInflight
	if taken || full {
		c.mu.Unlock()
		if taken {
			return c.reply(id, mcp.INVALID_REQUEST, fmt.Sprintf("id %s is already the id of a request in flight; give every request its own id", key))
		}
		return c.reply(id, mcp.INVALID_REQUEST, fmt.Sprintf("%d requests are in flight, the most one stdio session may have; wait for some to be answered", MaxStdioInflight))
	}
	ctx, cancel := context.WithCancel(ctx)
	call := &stdioCall{cancel: cancel}
	c.inflight[key] = call
	c.mu.Unlock()

	aliased := !keepsID(id)
	var err error
	if aliased {
		msg, err = setMember(msg, c.newAlias(), "id")
	}
	var tokenAlias json.RawMessage
	if token := changedToken(head); err == nil && token != nil {
		alias := c.newAlias()
		// The head matches member names as encoding/json does, in any
		// case; a token under a differently spelt "params" stays as it is.
		if withAlias, err := setMember(msg, alias, "params", "_meta", "progressToken"); err == nil {
			msg, tokenAlias = withAlias, alias
			c.mu.Lock()
			c.tokens[string(tokenAlias)] = token
			c.mu.Unlock()
		}
	}
	c.calls.Add(1)
	go func() {
		defer c.calls.Done()
		var resp any
		if err != nil {
			resp = errorMessage(id, mcp.INVALID_REQUEST, "the request is not a JSON object with the members JSON-RPC asks for")
		} else {
			served := WithHead(ctx, head)
			if c.requestContext != nil {
				served = c.requestContext(served)
			}
			if answer, ok := c.intercept.answer(served, head, msg); ok {
				resp = answer
			} else {
				resp = c.serve(served, msg)
			}
		}
		c.finish(key, call, tokenAlias)
		if resp == nil || call.cancelled.Load() {
			return // the client cancelled it, so it is not answered
		}
		data, err := json.Marshal(resp)
		if err == nil && aliased {
			data, err = setMember(data, id, "id")
		}
		if err != nil {
			c.log.Error("an answer could not be encoded", "id", key, "err", err)
			data, _ = json.Marshal(errorMessage(id, mcp.INTERNAL_ERROR, "the answer could not be encoded; the server is still running"))
		}
		if err := c.out.write(json.RawMessage(data)); err != nil {
			c.log.Warn("an answer could not be written to the client", "id", key, "err", err)
		}
	}()
	return nil
}

// serve runs one request through mcp-go; a panic is its error answer.
func (c *stdioConn) serve(ctx context.Context, msg json.RawMessage) (resp any) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("a request panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp = errorMessage(member(msg, "id"), mcp.INTERNAL_ERROR, "internal error; the server is still running, try again")
		}
	}()
	return c.mcp.HandleMessage(ctx, msg)
}

// finish forgets a call that has ended.
func (c *stdioConn) finish(key string, call *stdioCall, tokenAlias json.RawMessage) {
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	call.cancel()
	if tokenAlias != nil {
		time.AfterFunc(tokenAliasLife, func() {
			c.mu.Lock()
			delete(c.tokens, string(tokenAlias))
			c.mu.Unlock()
		})
	}
}

// cancel cancels the request in flight with that id, if any: whether it has
// started or not, it stops, and it is not answered.
func (c *stdioConn) cancel(id json.RawMessage) {
	if id == nil {
		return
	}
	c.mu.Lock()
	call := c.inflight[idKey(id)]
	c.mu.Unlock()
	if call != nil {
		call.cancelled.Store(true)
		call.cancel()
	}
}

// newAlias returns a JSON string no client id can equal.
func (c *stdioConn) newAlias() json.RawMessage {
	alias, _ := json.Marshal(fmt.Sprintf("%s%d", c.alias, c.n.Add(1)))
	return alias
}

// notify writes the session's notifications until ctx is done, with each
// aliased progress token swapped back.
func (c *stdioConn) notify(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-c.sess.notifications:
			data, err := json.Marshal(n)
			if token, ok := n.Params.AdditionalFields["progressToken"].(string); ok && err == nil {
				quoted, _ := json.Marshal(token)
				c.mu.Lock()
				orig := c.tokens[string(quoted)]
				c.mu.Unlock()
				if orig != nil {
					data, err = setMember(data, orig, "params", "progressToken")
				}
			}
			if err == nil {
				err = c.out.write(json.RawMessage(data))
			}
			if err != nil {
				c.log.Warn("a notification could not be written to the client", "method", n.Method, "err", err)
			}
		}
	}
}

// reply writes an error answer; id nil means the request's id is unknown.
func (c *stdioConn) reply(id json.RawMessage, code int, message string) error {
	return c.out.write(errorMessage(id, code, message))
}

// jsonrpcError is a JSON-RPC error answer with the id exactly as the client wrote it.
type jsonrpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func errorMessage(id json.RawMessage, code int, message string) jsonrpcError {
	if id == nil || !validID(id) {
		id = json.RawMessage("null")
	}
	e := jsonrpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: id}
	e.Error.Code, e.Error.Message = code, message
	return e
}

package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Client.Call once the channel has ended; Client.Err
// says why.
var ErrClosed = errors.New("agent channel closed")

// ErrNotDelivered wraps ErrClosed when the channel ended before the agent
// acknowledged the request: the agent never ran it, so it may be sent again
// on a new channel.
var ErrNotDelivered = fmt.Errorf("%w before the agent took the request", ErrClosed)

// ErrSilent ends a watched channel on which nothing arrived for too long:
// the stream froze (a stopped Podman service relays it) or the agent hangs.
var ErrSilent = errors.New("nothing came from the agent")

// Client multiplexes calls over one channel to the agent: each call gets an
// ID, and answers may arrive in any order. Each answer is decoded once,
// straight into its caller's result. It is safe for concurrent use.
type Client struct {
	w *Writer

	mu      sync.Mutex
	pending map[uint64]*pendingCall
	next    uint64
	err     error

	done chan struct{}

	lastFrame atomic.Int64 // unix nanoseconds of the last frame read
	silent    atomic.Pointer[error]
}

// pendingCall is a call waiting for its answer.
type pendingCall struct {
	result   any            // where the answer's result is decoded; nil to discard it
	progress func(Progress) // receives progress frames; nil to drop them
	answer   chan error     // receives nil, the agent's *Error, or a decoding error
	acked    atomic.Bool    // the agent took the request
}

// NewClient starts reading answers from r and returns a Client that writes
// requests to w. The channel ends when r does; the caller owns r and w and
// closes them to end it early.
func NewClient(r io.Reader, w io.Writer) *Client {
	c := &Client{w: NewWriter(w), pending: map[uint64]*pendingCall{}, done: make(chan struct{})}
	c.lastFrame.Store(time.Now().UnixNano())
	go c.readLoop(NewReader(r))
	return c
}

// Watch keeps the channel honest until it ends: whenever nothing has
// arrived for interval it pings the agent, and when nothing has arrived for
// timeout it ends the channel with ErrSilent and closes closer, which must
// end the reads. Calls in flight then fail instead of hanging.
func (c *Client) Watch(interval, timeout time.Duration, closer io.Closer) {
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		var pinging atomic.Bool
		for {
			select {
			case <-c.done:
				return
			case <-tick.C:
			}
			quiet := time.Since(time.Unix(0, c.lastFrame.Load()))
			if quiet >= timeout {
				err := fmt.Errorf("%w for %s", ErrSilent, quiet.Round(time.Second))
				c.silent.Store(&err)
				closer.Close()
				return
			}
			// The write may block on a frozen stream; it must not stop the watch.
			if quiet >= interval && pinging.CompareAndSwap(false, true) {
				go func() {
					defer pinging.Store(false)
					_ = c.w.Write(Request{ID: c.newID(), Op: OpPing})
				}()
			}
		}
	}()
}

func (c *Client) newID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return c.next
}

// Done is closed when the channel has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why the channel ended, or returns nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends op with args and decodes the answer into result (a pointer, or
// nil). An error from the agent is returned as *Error. If ctx ends first, the
// agent is told to cancel the request and ctx's error is returned; if the
// channel ends first, the error wraps ErrClosed.
func (c *Client) Call(ctx context.Context, op string, args, result any) error {
	return c.CallWithProgress(ctx, op, args, result, nil)
}

// CallWithProgress is Call, with progress (if not nil) called, on the
// client's reading goroutine, for each progress frame of the request; it
// must not block.
func (c *Client) CallWithProgress(ctx context.Context, op string, args, result any, progress func(Progress)) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encoding %s arguments: %w", op, err)
	}
	call := &pendingCall{result: result, progress: progress, answer: make(chan error, 1)}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	c.next++
	id := c.next
	c.pending[id] = call
	c.mu.Unlock()
	defer c.forget(id)

	if err := c.w.Write(Request{ID: id, Op: op, Args: raw}); err != nil {
		return fmt.Errorf("%w: %w", ErrNotDelivered, err)
	}
	select {
	case err := <-call.answer:
		return err
	case <-ctx.Done():
		// Best effort: if the channel is broken the request dies with it anyway.
		cancel, _ := json.Marshal(CancelArgs{Target: id})
		_ = c.w.Write(Request{Op: OpCancel, Args: cancel})
		return ctx.Err()
	case <-c.done:
		select {
		case err := <-call.answer: // answered just before the end
			return err
		default:
		}
		if !call.acked.Load() {
			return fmt.Errorf("%w: %w", ErrNotDelivered, c.Err())
		}
		return fmt.Errorf("%w: %w", ErrClosed, c.Err())
	}
}

func (c *Client) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// readLoop routes each answer by the ID at the start of its frame and
// decodes it into the waiting call's result.
func (c *Client) readLoop(r *Reader) {
	var err error
	for {
		var line []byte
		if line, err = r.readLine(); err != nil {
			break
		}
		c.lastFrame.Store(time.Now().UnixNano())
		id, rest, ok := leadingID(line)
		if !ok {
			err = fmt.Errorf("decoding frame: no leading id in %.40q", line)
			break
		}
		c.mu.Lock()
		call := c.pending[id]
		c.mu.Unlock()
		if call == nil {
			continue // the caller gave up, or a second answer to one request
		}
		if bytes.Equal(rest, []byte(`,"ack":true}`)) {
			call.acked.Store(true)
			continue
		}
		if p, ok := progressFrame(rest); ok {
			if call.progress != nil {
				call.progress(p)
			}
			continue
		}
		select {
		case call.answer <- decodeAnswer(line, call.result):
		default:
		}
	}
	if errors.Is(err, io.EOF) {
		err = io.EOF
	}
	if silent := c.silent.Load(); silent != nil {
		err = *silent
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

// decodeAnswer decodes a response frame into result and returns the agent's
// error, if it sent one.
func decodeAnswer(line []byte, result any) error {
	if result == nil {
		result = &json.RawMessage{}
	}
	resp := Response{Result: result}
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	return nil
}

// progressFrame decodes the rest of a frame, after its id, when the frame
// only reports progress: Response encodes its fields in order, so such a
// frame reads {"id":N,"progress":{...}}.
func progressFrame(rest []byte) (Progress, bool) {
	body, ok := bytes.CutPrefix(rest, []byte(`,"progress":`))
	if !ok {
		return Progress{}, false
	}
	var p Progress
	if err := json.Unmarshal(bytes.TrimSuffix(bytes.TrimRight(body, "\n"), []byte("}")), &p); err != nil {
		return Progress{}, false
	}
	return p, true
}

// leadingID reads the ID of a frame that starts with {"id":N and returns
// the rest of the frame.
func leadingID(line []byte) (uint64, []byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"id":`))
	if !ok {
		return 0, nil, false
	}
	var id uint64
	n := 0
	for ; n < len(rest) && rest[n] >= '0' && rest[n] <= '9'; n++ {
		id = id*10 + uint64(rest[n]-'0')
	}
	ok = n > 0 && n <= 19 && n < len(rest) && (rest[n] == ',' || rest[n] == '}')
	return id, rest[n:], ok
}

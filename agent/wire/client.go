package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrClosed is returned by Client.Call once the channel has ended; Client.Err
// says why.
var ErrClosed = errors.New("agent channel closed")

// Client multiplexes calls over one channel to the agent: each call gets an
// ID, and answers may arrive in any order. It is safe for concurrent use.
type Client struct {
	w *Writer

	mu      sync.Mutex
	pending map[uint64]chan Response
	next    uint64
	err     error

	done chan struct{}
}

// NewClient starts reading answers from r and returns a Client that writes
// requests to w. The channel ends when r does; the caller owns r and w and
// closes them to end it early.
func NewClient(r io.Reader, w io.Writer) *Client {
	c := &Client{w: NewWriter(w), pending: map[uint64]chan Response{}, done: make(chan struct{})}
	go c.readLoop(NewReader(r))
	return c
}

// Done is closed when the channel has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why the channel ended, or returns nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends op with args and decodes the answer into result (which may be
// nil). An error from the agent is returned as *Error. If ctx ends first, the
// agent is told to cancel the request and ctx's error is returned; if the
// channel ends first, the error wraps ErrClosed.
func (c *Client) Call(ctx context.Context, op string, args, result any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encoding %s arguments: %w", op, err)
	}
	ch := make(chan Response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	defer c.forget(id)

	if err := c.w.Write(Request{ID: id, Op: op, Args: raw}); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return resp.Error
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(resp.Result, result); err != nil {
			return fmt.Errorf("decoding %s result: %w", op, err)
		}
		return nil
	case <-ctx.Done():
		// Best effort: if the channel is broken the request dies with it anyway.
		cancel, _ := json.Marshal(CancelArgs{Target: id})
		_ = c.w.Write(Request{Op: OpCancel, Args: cancel})
		return ctx.Err()
	case <-c.done:
		return fmt.Errorf("%w: %w", ErrClosed, c.Err())
	}
}

func (c *Client) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Client) readLoop(r *Reader) {
	var err error
	for {
		var resp Response
		if err = r.Next(&resp); err != nil {
			break
		}
		c.mu.Lock()
		ch, ok := c.pending[resp.ID]
		c.mu.Unlock()
		if ok {
			select {
			case ch <- resp:
			default: // a second answer to one request: ignore it
			}
		}
	}
	if errors.Is(err, io.EOF) {
		err = io.EOF
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

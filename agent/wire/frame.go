package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxFrameBytes bounds one frame. The largest legitimate frame (two capped
// output streams, or a file's content, with JSON escaping) is far smaller;
// anything bigger means the stream is corrupt.
const MaxFrameBytes = 8 << 20

// ErrFrameTooLarge is returned by Reader.Next for a line longer than MaxFrameBytes.
var ErrFrameTooLarge = errors.New("frame exceeds the size limit")

// Writer writes frames. It is safe for concurrent use; each frame is written
// with a single Write call so frames never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	fw := &Writer{w: w}
	fw.enc = json.NewEncoder(&fw.buf)
	fw.enc.SetEscapeHTML(false)
	return fw
}

// Write encodes v as one frame.
func (w *Writer) Write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	// Encode appends the newline that ends the frame.
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("encoding frame: %w", err)
	}
	if w.buf.Len() > MaxFrameBytes {
		return ErrFrameTooLarge
	}
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		return fmt.Errorf("writing frame: %w", err)
	}
	return nil
}

// Reader reads frames. It is not safe for concurrent use.
type Reader struct {
	r *bufio.Reader
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next decodes the next frame into v. It returns io.EOF at a clean end of
// stream, ErrFrameTooLarge for an oversized line, and a decoding error for a
// line that is not a JSON object of v's shape; after any error the stream is
// not usable.
func (r *Reader) Next(v any) error {
	line, err := r.readLine()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("decoding frame: %w", err)
	}
	return nil
}

func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxFrameBytes {
			return nil, ErrFrameTooLarge
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

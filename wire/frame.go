package wire

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// MaxFrameBytes bounds one frame. The largest legitimate frame (two capped
// output streams, or a file's content, with JSON escaping) is far smaller;
// anything bigger means the stream is corrupt.
const MaxFrameBytes = 8 << 20

// ErrFrameTooLarge is returned by Reader.Next for a line longer than MaxFrameBytes.
var ErrFrameTooLarge = errors.New("frame exceeds the size limit")

// ErrCorruptFrame is returned by Reader.Next for a line whose checksum is
// missing or does not match its JSON: bytes were lost, added or changed.
var ErrCorruptFrame = errors.New("frame checksum mismatch (the channel is corrupt)")

// sumLen is the length of a frame's check: a tab and eight hex digits.
const sumLen = 1 + 8

// castagnoli is CRC-32C, which CPUs compute in hardware.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendSum ends the JSON in frame with a tab, its CRC-32C in hex and the
// newline. JSON escapes tabs inside strings and the encoder writes none
// between tokens, so the last tab of a frame always starts its check.
func appendSum(frame []byte) []byte {
	frame = append(frame, '\t')
	frame = hex.AppendEncode(frame, sumOf(frame[:len(frame)-1]))
	return append(frame, '\n')
}

func sumOf(body []byte) []byte {
	crc := crc32.Checksum(body, castagnoli)
	return []byte{byte(crc >> 24), byte(crc >> 16), byte(crc >> 8), byte(crc)}
}

// checkSum verifies a frame read up to and including its newline and
// returns its JSON.
func checkSum(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(line) < sumLen || line[len(line)-sumLen] != '\t' {
		return nil, fmt.Errorf("%w: no checksum at the end of %.40q", ErrCorruptFrame, line)
	}
	body, sum := line[:len(line)-sumLen], line[len(line)-sumLen+1:]
	if want := hex.EncodeToString(sumOf(body)); string(sum) != want {
		return nil, fmt.Errorf("%w: %.40q", ErrCorruptFrame, body)
	}
	return body, nil
}

// Writer writes frames: one JSON object, a tab, its CRC-32C and a newline.
// It is safe for concurrent use; each frame is written with a single Write
// call so frames never interleave.
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
	frame := appendSum(bytes.TrimSuffix(w.buf.Bytes(), []byte("\n")))
	if len(frame) > MaxFrameBytes {
		return ErrFrameTooLarge
	}
	if _, err := w.w.Write(frame); err != nil {
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
// stream, ErrFrameTooLarge for an oversized line, ErrCorruptFrame for a
// line whose checksum fails, and a decoding error for a line that is not a
// JSON object of v's shape; after any error the stream is not usable.
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

// readLine returns the JSON of the next frame, checked.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.readRaw()
	if err != nil {
		return nil, err
	}
	return checkSum(line)
}

func (r *Reader) readRaw() ([]byte, error) {
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

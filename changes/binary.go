package changes

import (
	"bufio"
	"compress/zlib"
	"fmt"
	"io"
)

// base85 is git's alphabet for binary patches (not Ascii85's).
const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// lineBytes is the most bytes one line of a binary patch holds.
const lineBytes = 52

// writeLiteral writes a "literal" hunk of a git binary patch: size, the
// bytes of r (exactly size of them) deflated, and a blank line.
func writeLiteral(w *bufio.Writer, r io.Reader, size int64) error {
	fmt.Fprintf(w, "literal %d\n", size)
	lines := &lineEncoder{w: w}
	z := zlib.NewWriter(lines)
	n, err := io.Copy(z, r)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("a file changed size while being written to the patch (%d bytes, expected %d)", n, size)
	}
	if err := z.Close(); err != nil {
		return err
	}
	lines.flush()
	_, err = w.WriteString("\n")
	return err
}

// lineEncoder writes bytes as git's binary patch lines: a length character
// ('A'-'Z' for 1-26 bytes, 'a'-'z' for 27-52), then base85 in groups of four.
type lineEncoder struct {
	w   *bufio.Writer
	buf []byte
}

func (e *lineEncoder) Write(p []byte) (int, error) {
	e.buf = append(e.buf, p...)
	for len(e.buf) >= lineBytes {
		e.line(e.buf[:lineBytes])
		e.buf = e.buf[lineBytes:]
	}
	return len(p), nil
}

// flush writes what is left as a last, shorter line.
func (e *lineEncoder) flush() {
	if len(e.buf) > 0 {
		e.line(e.buf)
		e.buf = nil
	}
}

func (e *lineEncoder) line(data []byte) {
	n := len(data)
	if n <= 26 {
		e.w.WriteByte(byte('A' + n - 1))
	} else {
		e.w.WriteByte(byte('a' + n - 27))
	}
	for i := 0; i < n; i += 4 {
		var acc uint32
		for j := range 4 {
			acc <<= 8
			if i+j < n {
				acc |= uint32(data[i+j])
			}
		}
		var group [5]byte
		for k := 4; k >= 0; k-- {
			group[k] = base85[acc%85]
			acc /= 85
		}
		e.w.Write(group[:])
	}
	e.w.WriteByte('\n')
}

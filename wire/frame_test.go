package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFramesNeverCarryControlBytes(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	payload := "line1\nline2\x00\x10\x11\r\t\x1b[31m€😀"
	if err := w.Write(ExecArgs{Argv: []string{"cat"}, Stdin: payload}); err != nil {
		t.Fatal(err)
	}
	frame := buf.Bytes()
	if bytes.IndexByte(frame, '\n') != len(frame)-1 {
		t.Fatalf("frame has a newline before its end: %q", frame)
	}
	for _, b := range frame[:len(frame)-sumLen-1] {
		if b < 0x20 || b == 0x7f {
			t.Fatalf("frame carries control byte %#x: %q", b, frame)
		}
	}
	var got ExecArgs
	if err := NewReader(&buf).Next(&got); err != nil {
		t.Fatal(err)
	}
	if got.Stdin != payload {
		t.Errorf("round trip = %q, want %q", got.Stdin, payload)
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  error
	}{
		{name: "clean end", input: "", want: io.EOF},
		{name: "cut frame", input: `{"id":1`, want: io.ErrUnexpectedEOF},
		{name: "no checksum", input: `{"id":1}` + "\n", want: ErrCorruptFrame},
		{name: "flipped byte", input: strings.Replace(string(appendSum([]byte(`{"id":1}`))), "1", "2", 1), want: ErrCorruptFrame},
		{name: "lost byte", input: strings.Replace(string(appendSum([]byte(`{"id":12}`))), "2", "", 1), want: ErrCorruptFrame},
		{name: "oversized frame", input: strings.Repeat("x", MaxFrameBytes+1) + "\n", want: ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v Response
			if err := NewReader(strings.NewReader(tt.input)).Next(&v); !errors.Is(err, tt.want) {
				t.Errorf("Next = %v, want %v", err, tt.want)
			}
		})
	}
	var v Response
	if err := NewReader(strings.NewReader(string(appendSum([]byte("garbage"))))).Next(&v); err == nil {
		t.Error("a line that is not JSON decoded without error")
	}
}

func TestLongFrameAcrossBufferBoundary(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	big := strings.Repeat("é", 200_000)
	if err := w.Write(Response{ID: 7, Error: &Error{Code: CodeInternal, Message: big}}); err != nil {
		t.Fatal(err)
	}
	var got Response
	if err := NewReader(&buf).Next(&got); err != nil {
		t.Fatal(err)
	}
	if got.ID != 7 || got.Error.Message != big {
		t.Errorf("frame of %d bytes did not round-trip", buf.Len())
	}
}

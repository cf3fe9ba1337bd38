package mcpgoadapt

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// lineWriter writes one JSON-RPC message per line; it is safe for
// concurrent use, so messages never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// write marshals msg, or writes it as it is when it is already JSON.
func (l *lineWriter) write(msg any) error {
	data, ok := msg.(json.RawMessage)
	if !ok {
		var err error
		if data, err = marshalExact(msg); err != nil {
			return err
		}
	}
	line := make([]byte, 0, len(data)+1)
	line = append(append(line, data...), '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(line)
	return err
}

// stdioLine is one line read from the client.
type stdioLine struct {
	data []byte // the line without its line ending, when it is within the limit
	size int64  // the line's length in bytes, its line ending included
	// head and tail are the first and last bytes of a line over the limit,
	// kept to find its id.
	head, tail []byte
}

// overLimit reports whether the line was over the limit (and so not kept).
func (l stdioLine) overLimit() bool { return l.head != nil }

// Bytes of an overlong line kept to find its id.
const (
	keptHead = 4 << 10
	keptTail = 1 << 10
)

// lineReader reads newline-delimited messages and keeps at most max bytes
// of each, so a line of any length costs bounded memory.
type lineReader struct {
	r   *bufio.Reader
	max int64
}

func newLineReader(r io.Reader, max int64) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line; io.EOF comes after the last one.
func (l *lineReader) next() (stdioLine, error) {
	var line stdioLine
	for {
		chunk, err := l.r.ReadSlice('\n')
		line.size += int64(len(chunk))
		switch {
		case line.head != nil:
			line.tail = lastBytes(append(line.tail, chunk...), keptTail)
		case int64(len(line.data)+len(chunk)) <= l.max+2: // +2: the line ending
			line.data = append(line.data, chunk...)
		default:
			whole := append(line.data, chunk...)
			line.head = append([]byte(nil), whole[:min(len(whole), keptHead)]...)
			line.tail = lastBytes(whole, keptTail)
			line.data = nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (!errors.Is(err, io.EOF) || line.size == 0) {
			return line, err
		}
		line.data = bytes.TrimRight(line.data, "\r\n")
		if line.head == nil && int64(len(line.data)) > l.max {
			line.head, line.tail = line.data[:min(len(line.data), keptHead)], lastBytes(line.data, keptTail)
			line.data = nil
		}
		return line, nil
	}
}

func lastBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append([]byte(nil), b[len(b)-n:]...)
}

// tailID finds an id that is the last member of a message.
var tailID = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)\s*}\s*$`)

// overlongID finds the id of a message too long to read whole: among the
// members before the first one that does not fit in its head, or as its last
// member. It returns nil when neither holds it.
func overlongID(head, tail []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			key, err := dec.Token()
			var v json.RawMessage
			if err != nil || dec.Decode(&v) != nil {
				break
			}
			if key == "id" {
				return v
			}
		}
	}
	if m := tailID.FindSubmatch(tail); m != nil && json.Valid(m[1]) {
		return m[1]
	}
	return nil
}

// validID reports whether raw is an id JSON-RPC allows in a request: a
// string or a number.
func validID(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// keepsID reports whether mcp-go gives the id back exactly as the client
// wrote it, by doing what it does: it reads numbers as float64, so 2^64
// would come back as 18446744073709552000, 1e3 as 1000 and 1.50 as 1.5; it
// replaces invalid UTF-8 in strings, and escapes "<" as \u003c. Ids it
// would change are swapped for an alias while mcp-go holds them.
func keepsID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	back, err := json.Marshal(mcp.NewRequestId(v))
	return err == nil && bytes.Equal(back, raw)
}

// changedToken returns the request's progress token when mcp-go would
// change it (see keepsID), else nil.
func changedToken(head *Head) json.RawMessage {
	token := head.ProgressToken()
	if token == nil || !validID(token) || keepsID(token) {
		return nil
	}
	return token
}

// newAliasPrefix returns the start of the aliases of one connection or
// server, "wink-<random>-": no id a client writes shares it.
func newAliasPrefix() string {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	return "wink-" + hex.EncodeToString(nonce) + "-"
}

// idKey is the key of an id among those in flight: its compact JSON text.
func idKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// setMember returns msg with the member at path set to value.
func setMember(msg json.RawMessage, value json.RawMessage, path ...string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(msg, &obj); err != nil {
		return nil, err
	}
	if len(path) > 1 {
		inner, err := setMember(obj[path[0]], value, path[1:]...)
		if err != nil {
			return nil, err
		}
		value = inner
	}
	obj[path[0]] = value
	return marshalExact(obj)
}

// marshalExact is json.Marshal without escaping "<", ">" and "&", which it
// would also do inside raw members: the client's ids come back as written.
func marshalExact(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// member returns the raw member at path, or nil.
func member(msg json.RawMessage, path ...string) json.RawMessage {
	for _, key := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(msg, &obj) != nil {
			return nil
		}
		msg = obj[key]
	}
	return msg
}

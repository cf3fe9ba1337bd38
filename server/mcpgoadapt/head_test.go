package mcpgoadapt

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// headCases are messages, well and badly formed, on which the one decoding
// of the head must agree with the decodings it replaced.
var headCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":"c"}]},"_meta":{"progressToken":1e3}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"<"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":7}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":{"a":1}}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":null}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"ProgressToken":1e3}}}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","task":{"ttl":1000}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"task":null}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"task":5}}`,
	`{"jsonrpc":"2.0","id":2,"Method":"tools/call","PARAMS":{"TASK":{}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///x"}}`,
	`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":null}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":"x"}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":null}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":[1],"task":{}}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":null,"task":{}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"server/discover"}`,
	`{"jsonrpc":"2.0","id":8,"method":5}`,
	`{"jsonrpc":"2.0","id":8,"method":null}`,
	`{"jsonrpc":"2.0","id":9,"result":{"roots":[]}}`,
	`{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":9,"error":null}`,
	`{"jsonrpc":"2.0","id":9,"error":"no"}`,
	`{"jsonrpc":"2.0","id":9,"method":"ping","error":{"code":"x"}}`,
	`{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`"x"`,
	`not json`,
}

// legacyStdioHead is how the stdio loop and the HTTP wrapper read every
// message before the head was decoded once.
type legacyStdioHead struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	clientAnswer
}

// legacyRequestHead is how checkRequest read every request.
type legacyRequestHead struct {
	Method string `json:"method"`
	Params struct {
		Meta map[string]any `json:"_meta"`
		URI  string         `json:"uri"`
	} `json:"params"`
}

// legacyChangedToken is how the transports found a progress token to alias.
func legacyChangedToken(msg []byte) json.RawMessage {
	if !bytes.Contains(msg, []byte(`"progressToken"`)) {
		return nil
	}
	token := member(msg, "params", "_meta", "progressToken")
	if token == nil || !validID(token) || keepsID(token) {
		return nil
	}
	return token
}

// legacyAsksForTask is how taskCall found a task-augmented call.
func legacyAsksForTask(msg []byte) bool {
	var call struct {
		Params struct {
			Task *json.RawMessage `json:"task"`
		} `json:"params"`
	}
	return json.Unmarshal(msg, &call) == nil && call.Params.Task != nil
}

func TestHeadReadsWhatTheDecodingsItReplacedRead(t *testing.T) {
	const versionKey = "io.modelcontextprotocol/protocolVersion"
	for _, msg := range headCases {
		raw := []byte(msg)
		head, err := DecodeHead(raw)
		var answer clientAnswer
		if err == nil {
			answer, err = head.clientAnswer()
		}
		var old legacyStdioHead
		oldErr := json.Unmarshal(raw, &old)
		if (err == nil) != (oldErr == nil) {
			t.Errorf("%s: read as a message: %v, before: %v", msg, err, oldErr)
			continue
		}
		if err == nil {
			if string(head.ID) != string(old.ID) || (head.Method == nil) != (old.Method == nil) || head.MethodName() != deref(old.Method) ||
				string(answer.Result) != string(old.Result) || (answer.Error == nil) != (old.Error == nil) {
				t.Errorf("%s: id %s method %q answer %+v, before: id %s method %q answer %+v", msg, head.ID, head.MethodName(), answer, old.ID, deref(old.Method), old.clientAnswer)
			}
			if got, want := changedToken(head), legacyChangedToken(raw); string(got) != string(want) {
				t.Errorf("%s: token to alias %s, before %s", msg, got, want)
			}
		}

		var req legacyRequestHead
		checked := json.Unmarshal(raw, &req) == nil
		head, err = HeadOf(context.Background(), raw)
		uri, uriOK := "", false
		if err == nil && head.ParamsRead() {
			uri, uriOK = head.URI()
		}
		if uriOK != checked {
			t.Errorf("%s: checked %v, before %v", msg, uriOK, checked)
			continue
		}
		if !checked {
			continue
		}
		oldVersion, _ := req.Params.Meta[versionKey].(string)
		if head.MethodName() != req.Method || uri != req.Params.URI || head.ProtocolVersion(versionKey) != oldVersion {
			t.Errorf("%s: method %q uri %q version %q, before %q %q %q", msg, head.MethodName(), uri, head.ProtocolVersion(versionKey), req.Method, req.Params.URI, oldVersion)
		}
		if head.AsksForTask() != legacyAsksForTask(raw) {
			t.Errorf("%s: asks for a task %v, before %v", msg, head.AsksForTask(), legacyAsksForTask(raw))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestHeadOfPrefersTheTransportsHead(t *testing.T) {
	carried := &Head{Method: new(string)}
	if got, err := HeadOf(WithHead(context.Background(), carried), []byte(`not json`)); err != nil || got != carried {
		t.Errorf("HeadOf with a carried head = %v, %v; want the carried head", got, err)
	}
	if _, err := HeadOf(context.Background(), []byte(`not json`)); err == nil {
		t.Error("HeadOf without a carried head decoded a line that is not JSON")
	}
}

package schema

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzDecode decodes any bytes as tool arguments: no panic, and what is
// accepted is valid UTF-8, within the schema's limits, and survives a
// round trip unchanged: encoded again, it decodes to arguments that encode
// the same. (An empty map or list that omitempty drops comes back nil, as
// {"env":{}} does: the same arguments, which reflect.DeepEqual would call
// different.)
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"needed":"x"}`, `{"needed":"x","command":["a"],"timeout_seconds":120,"text":"abcde"}`,
		`{"needed":"x","needed":"y"}`, `{"needed":"x\ud800"}`, "{\"needed\":\"\xff\"}", `{"Needed":"x"}`, `{"needed":1}`,
		`{"needed":"x","env":{"A":"1","B":"2","C":"3"}}`, `[]`, `{"needed":"x"} {}`, `{"inner":{"name":"abcd"},"needed":""}`, `{"needed":"0","env":{}}`} {
		f.Add([]byte(seed))
	}
	dec, err := NewDecoder[sample]()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := dec.Decode(raw)
		if err != nil {
			return
		}
		if !utf8.Valid(raw) {
			t.Fatalf("accepted invalid UTF-8: %q", raw)
		}
		if len(v.Command) > 3 || utf8.RuneCountInString(v.Text) > 5 || v.Timeout < 0 || v.Timeout > 120 || len(v.Env) > 2 || v.Needed == "forbidden" {
			t.Fatalf("accepted %q beyond the schema: %+v", raw, v)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		w, err := dec.Decode(again)
		if err != nil {
			t.Fatalf("round trip of %q: %s refused: %v", raw, again, err)
		}
		if twice, _ := json.Marshal(w); !bytes.Equal(again, twice) {
			t.Fatalf("round trip of %q: %s then %s", raw, again, twice)
		}
	})
}

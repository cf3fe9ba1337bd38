package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
)

type nested struct {
	Name string `json:"name" jsonschema:"maxLength=3"`
}

type sample struct {
	Command []string          `json:"command,omitempty" jsonschema:"minItems=1,maxItems=3,pattern=^[\\x01-\\x7F]*$"`
	Timeout int               `json:"timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=120,default=30"`
	Text    string            `json:"text,omitempty" jsonschema:"maxLength=5"`
	Mode    string            `json:"mode,omitempty" jsonschema:"enum=a,enum=b"`
	Flag    *bool             `json:"flag,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Inner   *nested           `json:"inner,omitempty"`
	Needed  string            `json:"needed"`
}

func (sample) JSONSchemaExtend(s *jsonschema.Schema) {
	env, _ := s.Properties.Get("env")
	env.MaxProperties = ptr(uint64(2))
	env.PropertyNames = &jsonschema.Schema{Pattern: EnvName}
}

func (s *sample) Validate() error {
	if s.Needed == "forbidden" {
		return errors.New("needed: may not be forbidden")
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func TestSchemaIsInlineObject(t *testing.T) {
	raw, err := For[sample]()
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"$ref", "$defs", "$schema", "$id", "anyOf", "oneOf"} {
		if _, ok := s[banned]; ok {
			t.Errorf("schema has top-level %s: %s", banned, raw)
		}
	}
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Errorf("type %v, additionalProperties %v; want object, false", s["type"], s["additionalProperties"])
	}
	if req, _ := s["required"].([]any); len(req) != 1 || req[0] != "needed" {
		t.Errorf("required = %v, want [needed]", s["required"])
	}
	if strings.Contains(string(raw), "$ref") {
		t.Errorf("schema references definitions: %s", raw)
	}
}

func TestDecode(t *testing.T) {
	dec, err := NewDecoder[sample]()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{name: "minimal", args: `{"needed":"x"}`},
		{name: "at every upper bound", args: `{"needed":"x","command":["a","b","c"],"timeout_seconds":120,"text":"12345","env":{"A":"1","B":"2"}}`},
		{name: "at lower bounds", args: `{"needed":"x","command":["a"],"timeout_seconds":1}`},
		{name: "five euro signs are five characters", args: `{"needed":"x","text":"€€€€€"}`},
		{name: "five emoji are five characters", args: `{"needed":"x","text":"😀😀😀😀😀"}`},
		{name: "empty means no arguments", args: ``, wantErr: "needed: is required"},
		{name: "missing required", args: `{}`, wantErr: "needed: is required"},
		{name: "unknown field", args: `{"needed":"x","bogus":1}`, wantErr: "bogus: unknown field"},
		{name: "wrong case", args: `{"Needed":"x"}`, wantErr: "Needed: unknown field (field names are case-sensitive"},
		{name: "wrong type", args: `{"needed":"x","timeout_seconds":"10"}`, wantErr: "timeout_seconds: must be integer (got string)"},
		{name: "fraction", args: `{"needed":"x","timeout_seconds":1.5}`, wantErr: "timeout_seconds: must be integer (got number)"},
		{name: "null", args: `{"needed":"x","timeout_seconds":null}`, wantErr: "timeout_seconds: must be integer (got null)"},
		{name: "huge number", args: `{"needed":"x","timeout_seconds":1e309}`, wantErr: "timeout_seconds: must be at most 120"},
		{name: "below minimum", args: `{"needed":"x","timeout_seconds":0}`, wantErr: "timeout_seconds: must be at least 1 (got 0)"},
		{name: "above maximum", args: `{"needed":"x","timeout_seconds":121}`, wantErr: "timeout_seconds: must be at most 120 (got 121)"},
		{name: "too long", args: `{"needed":"x","text":"123456"}`, wantErr: "text: must be at most 5 characters long (got 6)"},
		{name: "too many items", args: `{"needed":"x","command":["a","b","c","d"]}`, wantErr: "command: must have at most 3 items (got 4)"},
		{name: "too few items", args: `{"needed":"x","command":[]}`, wantErr: "command: must have at least 1 items (got 0)"},
		{name: "item pattern", args: `{"needed":"x","command":["a","é"]}`, wantErr: "command[1]: must be ASCII"},
		{name: "enum", args: `{"needed":"x","mode":"c"}`, wantErr: "mode: must be one of a, b (got c)"},
		{name: "too many entries", args: `{"needed":"x","env":{"A":"1","B":"2","C":"3"}}`, wantErr: "env: must have at most 2 entries (got 3)"},
		{name: "bad key", args: `{"needed":"x","env":{"1X":"1"}}`, wantErr: `env: the key "1X" must be a variable name`},
		{name: "nested field", args: `{"needed":"x","inner":{"name":"abcd"}}`, wantErr: "inner.name: must be at most 3 characters long (got 4)"},
		{name: "duplicate key", args: `{"needed":"x","needed":"y"}`, wantErr: "needed: the key appears more than once"},
		{name: "nested duplicate key", args: `{"needed":"x","env":{"A":"1","A":"2"}}`, wantErr: "env.A: the key appears more than once"},
		{name: "invalid UTF-8", args: "{\"needed\":\"x\xff\"}", wantErr: "needed: not valid UTF-8 (byte 0xff)"},
		{name: "lone surrogate", args: `{"needed":"\ud800"}`, wantErr: "lone UTF-16 surrogate"},
		{name: "lone low surrogate", args: `{"needed":"\udc00x"}`, wantErr: "lone UTF-16 surrogate"},
		{name: "escaped backslash is not a surrogate", args: `{"needed":"\\ud800"}`},
		{name: "surrogate pair", args: `{"needed":"\ud83d\ude00"}`},
		{name: "not an object", args: `[1]`, wantErr: "arguments: must be object (got array)"},
		{name: "custom rule", args: `{"needed":"forbidden"}`, wantErr: "needed: may not be forbidden"},
		{name: "several problems", args: `{"timeout_seconds":0,"text":"123456"}`, wantErr: "needed: is required; text: must be at most 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dec.Decode(json.RawMessage(tt.args))
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Decode(%s) = %v, want success", tt.args, err)
				}
				return
			}
			var argErr *ArgumentError
			if !errors.As(err, &argErr) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Decode(%s) = %v, want an ArgumentError containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	dec, err := NewDecoder[sample]()
	if err != nil {
		t.Fatal(err)
	}
	got, err := dec.Decode(json.RawMessage(`{"needed":"n","command":["ls","-l"],"flag":false,"env":{"A":"1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Needed != "n" || len(got.Command) != 2 || got.Flag == nil || *got.Flag || got.Env["A"] != "1" || got.Timeout != 0 {
		t.Errorf("decoded %+v", got)
	}
}

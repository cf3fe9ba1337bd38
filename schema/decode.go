package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Validator is implemented by params structs with rules beyond the schema.
// Validate runs after the schema checks pass and returns an error naming
// the field and the rule.
type Validator interface {
	Validate() error
}

// ArgumentError lists everything wrong with a tool's arguments.
type ArgumentError struct {
	Problems []string
}

// Error joins the problems in one message.
func (e *ArgumentError) Error() string {
	return "invalid arguments: " + strings.Join(e.Problems, "; ")
}

// Decoder validates and decodes the arguments of one tool into T. It is
// safe for concurrent use.
type Decoder[T any] struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
	fields   []string
}

// NewDecoder generates T's schema, changed by adjust (see For), and
// compiles it for validation.
func NewDecoder[T any](adjust ...func(*invopop.Schema)) (*Decoder[T], error) {
	raw, err := For[T](adjust...)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	const url = "mem:///schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compiling schema for %s: %w", reflect.TypeFor[T](), err)
	}
	var top struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	fields := make([]string, 0, len(top.Properties))
	for name := range top.Properties {
		fields = append(fields, name)
	}
	slices.Sort(fields)
	return &Decoder[T]{raw: raw, compiled: compiled, fields: fields}, nil
}

// Schema returns T's JSON Schema.
func (d *Decoder[T]) Schema() json.RawMessage { return d.raw }

// Decode checks raw (a JSON object; empty means {}) and decodes it. It
// rejects, as an *ArgumentError: JSON that is not valid UTF-8 or holds a lone
// UTF-16 surrogate (either would silently become U+FFFD), duplicated keys,
// unknown fields (names are case-sensitive), wrong types, values outside the
// schema's limits, and whatever T's Validate method rejects.
func (d *Decoder[T]) Decode(raw json.RawMessage) (T, error) {
	var zero T
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	if err := checkJSONText(raw); err != nil {
		return zero, &ArgumentError{Problems: []string{err.Error()}}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return zero, &ArgumentError{Problems: []string{fmt.Sprintf("arguments are not valid JSON: %v", err)}}
	}
	if err := d.compiled.Validate(inst); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return zero, &ArgumentError{Problems: []string{err.Error()}}
		}
		return zero, &ArgumentError{Problems: d.describe(verr)}
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return zero, &ArgumentError{Problems: []string{fmt.Sprintf("%s: must be %s (got a JSON %s)", typeErr.Field, typeErr.Type, typeErr.Value)}}
		}
		return zero, &ArgumentError{Problems: []string{err.Error()}}
	}
	if val, ok := any(&v).(Validator); ok {
		if err := val.Validate(); err != nil {
			return zero, &ArgumentError{Problems: []string{err.Error()}}
		}
	}
	return v, nil
}

// describe turns the validator's error tree into one sentence per failed
// rule, each naming the field, the limit and what was found.
func (d *Decoder[T]) describe(verr *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		// The validator checks a key as a value of its own, so the error's
		// instance location no longer names the map; its schema location does.
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			rule := "is not allowed"
			if len(e.Causes) == 1 {
				if p, ok := e.Causes[0].ErrorKind.(*kind.Pattern); ok {
					if phrase, ok := patternPhrases[p.Want]; ok {
						rule = phrase
					}
				}
			}
			out = append(out, fmt.Sprintf("%s: the key %q %s", fieldFromSchemaURL(e.SchemaURL), k.Property, rule))
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, d.sentence(e)...)
	}
	walk(verr)
	slices.Sort(out)
	return slices.Compact(out)
}

func (d *Decoder[T]) sentence(e *jsonschema.ValidationError) []string {
	field := fieldName(e.InstanceLocation)
	at := func(format string, args ...any) []string {
		return []string{field + ": " + fmt.Sprintf(format, args...)}
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []string
		for _, m := range k.Missing {
			out = append(out, joinField(field, m)+": is required")
		}
		return out
	case *kind.AdditionalProperties:
		var out []string
		for _, p := range k.Properties {
			msg := joinField(field, p) + ": unknown field"
			if len(e.InstanceLocation) == 0 {
				msg += " (field names are case-sensitive; the fields are " + strings.Join(d.fields, ", ") + ")"
			}
			out = append(out, msg)
		}
		return out
	case *kind.Type:
		return at("must be %s (got %s)", strings.Join(k.Want, " or "), k.Got)
	case *kind.MinLength:
		return at("must be at least %d characters long (got %d)", k.Want, k.Got)
	case *kind.MaxLength:
		return at("must be at most %d characters long (got %d)", k.Want, k.Got)
	case *kind.Minimum:
		return at("must be at least %s (got %s)", k.Want.RatString(), k.Got.RatString())
	case *kind.Maximum:
		return at("must be at most %s (got %s)", k.Want.RatString(), k.Got.RatString())
	case *kind.MinItems:
		return at("must have at least %d items (got %d)", k.Want, k.Got)
	case *kind.MaxItems:
		return at("must have at most %d items (got %d)", k.Want, k.Got)
	case *kind.MaxProperties:
		return at("must have at most %d entries (got %d)", k.Want, k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return at("must be one of %s (got %v)", strings.Join(want, ", "), k.Got)
	case *kind.Pattern:
		if phrase, ok := patternPhrases[k.Want]; ok {
			return at("%s", phrase)
		}
		return at("must match the pattern %s", k.Want)
	}
	return at("%v", e.ErrorKind)
}

// fieldName renders a JSON location as command[0] or env.PATH.
func fieldName(loc []string) string {
	if len(loc) == 0 {
		return "arguments"
	}
	var b strings.Builder
	for i, seg := range loc {
		switch {
		case isIndex(seg):
			b.WriteString("[" + seg + "]")
		case i == 0:
			b.WriteString(seg)
		default:
			b.WriteString("." + seg)
		}
	}
	return b.String()
}

func joinField(parent, child string) string {
	if parent == "arguments" {
		return child
	}
	return parent + "." + child
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// fieldFromSchemaURL names the field a schema location such as
// mem:///schema.json#/properties/env/propertyNames belongs to.
func fieldFromSchemaURL(url string) string {
	_, frag, _ := strings.Cut(url, "#")
	segs := strings.Split(strings.Trim(frag, "/"), "/")
	var names []string
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "properties" {
			names = append(names, segs[i+1])
			i++
		}
	}
	return fieldName(names)
}

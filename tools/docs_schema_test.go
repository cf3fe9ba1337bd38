package tools

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// jsonSchema is the part of a JSON Schema the reference shows.
type jsonSchema struct {
	Type                 string                `json:"type"`
	Description          string                `json:"description"`
	Properties           map[string]jsonSchema `json:"properties"`
	Required             []string              `json:"required"`
	Items                *jsonSchema           `json:"items"`
	AdditionalProperties json.RawMessage       `json:"additionalProperties"`
	PropertyNames        *jsonSchema           `json:"propertyNames"`
	OneOf                []jsonSchema          `json:"oneOf"`
	Enum                 []any                 `json:"enum"`
	Default              any                   `json:"default"`
	Format               string                `json:"format"`
	Pattern              string                `json:"pattern"`
	Minimum              *float64              `json:"minimum"`
	Maximum              *float64              `json:"maximum"`
	MinLength            *int                  `json:"minLength"`
	MaxLength            *int                  `json:"maxLength"`
	MinItems             *int                  `json:"minItems"`
	MaxItems             *int                  `json:"maxItems"`
	MaxProperties        *int                  `json:"maxProperties"`
	// order keeps the properties in the order the schema lists them.
	order []string
}

// UnmarshalJSON reads a schema and remembers the order of its properties,
// which is the order of the struct's fields.
func (s *jsonSchema) UnmarshalJSON(raw []byte) error {
	type plain jsonSchema
	if err := json.Unmarshal(raw, (*plain)(s)); err != nil {
		return err
	}
	var props struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &props); err != nil || len(props.Properties) == 0 {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(props.Properties)))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		s.order = append(s.order, key.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// schemaRow is one field of a schema, as the reference lists it.
type schemaRow struct {
	name, kind, description string
	required                bool
}

// schemaRows lists the properties of an object schema, each object inside
// an array or object given as its own rows (`entries[].name`).
func schemaRows(prefix string, s jsonSchema) []schemaRow {
	var rows []schemaRow
	for _, name := range s.order {
		p := s.Properties[name]
		rows = append(rows, schemaRow{name: prefix + name, kind: kindOf(p), description: p.Description, required: slices.Contains(s.Required, name)})
		switch {
		case p.Type == "object" && len(p.Properties) > 0:
			rows = append(rows, schemaRows(prefix+name+".", p)...)
		case p.Type == "array" && p.Items != nil && len(p.Items.Properties) > 0:
			rows = append(rows, schemaRows(prefix+name+"[].", *p.Items)...)
		}
	}
	return rows
}

// kindOf says what values a schema takes, with its limits, in words.
func kindOf(s jsonSchema) string {
	kind := s.Type
	switch {
	case len(s.OneOf) > 0:
		var alts []string
		for _, o := range s.OneOf {
			alts = append(alts, kindOf(o))
		}
		kind = strings.Join(alts, " or ")
	case s.Type == "array" && s.Items != nil:
		if s.Items.Type == "object" {
			kind = "array of objects"
		} else {
			kind = "array of " + kindOf(*s.Items)
		}
	case s.Type == "object" && len(s.AdditionalProperties) > 0 && string(s.AdditionalProperties) != "false":
		var values jsonSchema
		if json.Unmarshal(s.AdditionalProperties, &values) == nil {
			kind = "object of " + kindOf(values)
		}
	}
	if s.Format != "" {
		kind += " (" + s.Format + ")"
	}
	var limits []string
	if len(s.Enum) > 0 {
		var values []string
		for _, v := range s.Enum {
			values = append(values, "`"+jsonText(v)+"`")
		}
		limits = append(limits, "one of "+strings.Join(values, ", "))
	}
	limits = append(limits, bounds(s.Minimum, s.Maximum, "")...)
	limits = append(limits, intBounds(s.MinLength, s.MaxLength, " characters")...)
	limits = append(limits, intBounds(s.MinItems, s.MaxItems, " items")...)
	limits = append(limits, intBounds(nil, s.MaxProperties, " entries")...)
	if s.Pattern != "" {
		limits = append(limits, "matching `"+s.Pattern+"`")
	}
	if n := s.PropertyNames; n != nil {
		names := intBounds(n.MinLength, n.MaxLength, " characters")
		if n.Pattern != "" {
			names = append(names, "matching `"+n.Pattern+"`")
		}
		limits = append(limits, "names "+strings.Join(names, ", "))
	}
	if s.Default != nil {
		limits = append(limits, "default `"+jsonText(s.Default)+"`")
	}
	if len(limits) > 0 {
		kind += "; " + strings.Join(limits, "; ")
	}
	return kind
}

// bounds words a numeric range.
func bounds(lo, hi *float64, unit string) []string {
	switch {
	case lo != nil && hi != nil:
		return []string{number(*lo) + " to " + number(*hi) + unit}
	case lo != nil:
		return []string{"at least " + number(*lo) + unit}
	case hi != nil:
		return []string{"at most " + number(*hi) + unit}
	}
	return nil
}

// number writes v in full, never with an exponent (2097152, not 2.097152e+06).
func number(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// intBounds words a range of counts.
func intBounds(lo, hi *int, unit string) []string {
	f := func(p *int) *float64 {
		if p == nil {
			return nil
		}
		v := float64(*p)
		return &v
	}
	return bounds(f(lo), f(hi), unit)
}

// jsonText is v as JSON would write it.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// Package schema turns Go structs into the JSON Schemas a tool advertises,
// and decodes a tool's arguments strictly against the very same schema, so
// the limits a client sees and the checks the server makes cannot drift.
//
// Limits are written as struct tags (invopop/jsonschema syntax), or set in a
// JSONSchemaExtend method next to the struct where a tag cannot express them.
// Rules that no schema keyword can state (a combined byte count, say) go in
// a Validate method, which Decoder calls after the schema checks pass.
package schema

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"
)

// Patterns used in struct tags, valid in both ECMA-262 (clients) and RE2 (the server).
const (
	// ASCII matches ASCII text without NUL bytes.
	ASCII = `^[\x01-\x7F]*$`
	// EnvName matches an environment variable name.
	EnvName = `^[A-Za-z_][A-Za-z0-9_]*$`
	// CheckpointID matches a checkpoint's ID: c1, c2, ...
	CheckpointID = `^c[1-9][0-9]*$`
)

// patternPhrases says in words what a pattern demands, for error messages.
var patternPhrases = map[string]string{
	ASCII:        "must be ASCII without NUL bytes",
	EnvName:      "must be a variable name: letters, digits and '_', not starting with a digit",
	CheckpointID: "must be a checkpoint id such as c1 (workspace_checkpoints lists them)",
}

// For returns the JSON Schema of T as one inline object schema: no $ref, no
// $defs, no $schema, so every MCP client and model provider accepts it.
// Fields without omitempty are required; unknown fields are not allowed.
// adjust, if given, changes the generated schema before it is encoded: for
// a limit the configuration sets.
func For[T any](adjust ...func(*jsonschema.Schema)) (json.RawMessage, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("schema for %s: want a struct type", t)
	}
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	s := r.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	for _, a := range adjust {
		a(s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding schema for %s: %w", t, err)
	}
	return b, nil
}

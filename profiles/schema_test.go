package profiles

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite profiles.schema.json")

// TestSchemaFileIsCurrent keeps the published schema equal to the one the
// types give; `go test ./profiles -run Schema -update` rewrites it.
func TestSchemaFileIsCurrent(t *testing.T) {
	const file = "profiles.schema.json"
	if *update {
		if err := os.WriteFile(file, Schema(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, Schema()) {
		t.Fatalf("%s is out of date: run go test ./profiles -run Schema -update", file)
	}
}

// TestSchemaDescribesEveryField checks the schema against the reader: each
// field the reader knows is in the schema, so editors complete all of them.
func TestSchemaDescribesEveryField(t *testing.T) {
	var s struct {
		Properties struct {
			Profiles struct {
				AdditionalProperties struct {
					Properties map[string]struct {
						Properties map[string]any `json:"properties"`
					} `json:"properties"`
				} `json:"additionalProperties"`
			} `json:"profiles"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	fields := s.Properties.Profiles.AdditionalProperties.Properties
	for _, f := range []string{"description", "extends", "image", "setup", "env", "workdir", "limits", "egress"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("the schema lacks the field %s", f)
		}
	}
	for _, l := range []string{"memory", "cpus", "pids", "disk", "tmp", "command_timeout", "setup_timeout", "setup_disk"} {
		if _, ok := fields["limits"].Properties[l]; !ok {
			t.Errorf("the schema lacks limits.%s", l)
		}
	}
	// Every limit the schema names, the reader accepts.
	for l := range fields["limits"].Properties {
		value := "1g"
		switch l {
		case "cpus":
			value = "1"
		case "pids":
			value = "64"
		case "command_timeout", "setup_timeout":
			value = "1m"
		}
		if _, err := Parse("p.yaml", []byte("profiles:\n  a:\n    limits:\n      "+l+": "+value+"\n"), noEnv); err != nil {
			t.Errorf("limits.%s: %v", l, err)
		}
	}
}

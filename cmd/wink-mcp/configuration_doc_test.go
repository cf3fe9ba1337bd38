package main

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

const configurationDoc = "../../docs/configuration.md"

var (
	// usageFlag is a flag's line in the usage: "  -name" or "  -name value".
	usageFlag = regexp.MustCompile(`^  -([a-z0-9-]+)`)
	// usageEnv is the bracketed list of a flag's environment variables.
	usageEnv = regexp.MustCompile(`\[([A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)*)[],]`)
)

// TestConfigurationDocListsEveryFlag keeps docs/configuration.md's table
// whole: every flag the usage lists has a row, naming every environment
// variable that sets it.
func TestConfigurationDocListsEveryFlag(t *testing.T) {
	var usage bytes.Buffer
	if _, _, err := parseServeFlags([]string{"-h"}, func(string) (string, bool) { return "", false }, &usage); !errors.Is(err, errHelp) {
		t.Fatalf("-h: %v, want the usage", err)
	}
	raw, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // flag -> its environment cell
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) >= 3 && strings.HasPrefix(cells[0], "| `--") {
			rows[strings.Trim(cells[0], "| `-")] = cells[1]
		}
	}
	lines := strings.Split(usage.String(), "\n")
	flags := 0
	for i, line := range lines {
		m := usageFlag.FindStringSubmatch(line)
		if m == nil || i+1 >= len(lines) {
			continue
		}
		flags++
		name := m[1]
		env, ok := rows[name]
		if !ok {
			t.Errorf("%s has no row for --%s; add one (flag, environment, default)", configurationDoc, name)
			continue
		}
		e := usageEnv.FindStringSubmatch(lines[i+1])
		if e == nil {
			t.Errorf("--%s names no environment variable in its usage: %q", name, lines[i+1])
			continue
		}
		for _, v := range strings.Split(e[1], ", ") {
			if !strings.Contains(env, "`"+v+"`") {
				t.Errorf("%s: the row of --%s does not name %s (it says %s)", configurationDoc, name, v, env)
			}
		}
	}
	if flags < 40 {
		t.Errorf("found %d flags in the usage; the parse of it is broken:\n%s", flags, usage.String())
	}
}

// Package readme keeps the project's Markdown documents (the README,
// docs/, ARCHITECTURE.md, CONTRIBUTING.md) true: their generated sections
// (the tool table and reference, the Speed and Reliability figures, the
// profiles' build table, the package map) exactly what their sources say,
// and every relative link and #anchor in them leading somewhere.
package readme

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrStale is returned by Sync when a section differs from what it should
// say and update is false.
var ErrStale = errors.New("the section differs from its results file")

// Sync compares the part of the file at path from the line begin to the
// line end with body. When they differ it rewrites that part if update is
// set, and otherwise returns ErrStale.
func Sync(path, begin, end, body string, update bool) error {
	readme, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(readme)
	from, to := strings.Index(text, begin), strings.Index(text, end)
	if from < 0 || to < from {
		return fmt.Errorf("%s lacks the %q ... %q markers", path, begin, end)
	}
	want := begin + "\n" + body + end
	if text[from:to+len(end)] == want {
		return nil
	}
	if !update {
		return ErrStale
	}
	return os.WriteFile(path, []byte(text[:from]+want+text[to+len(end):]), 0o644)
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// movedBy is how far a row's ratio to its baseline may move between the
// committed results and a run before the comparison calls it moved: a
// third, either way.
const movedBy = 1.0 / 3

// The machine-speed baselines: a row with no baseline of its own is
// compared as a ratio to one of these, measured in the same run.
const (
	execBaselineRow       = "baseline: podman exec cat per read (bindings)"
	kubernetesBaselineRow = "Kubernetes baseline: a new exec of cat per read (client-go)"
)

// isBaseline says whether a row is a baseline or a reference, which the
// comparison divides by rather than compares.
func isBaseline(name string) bool {
	return strings.HasPrefix(name, "baseline:") || strings.HasPrefix(name, "reference:") || strings.HasPrefix(name, "Kubernetes baseline:")
}

// baselines maps each measured row of a run to its baseline's p50: the
// row right after it when that is a baseline of the same measurement
// ("baseline: the same ..."), else the machine-speed baseline of its
// engine, when the run has it.
func baselines(rows []measurement) map[string]float64 {
	byName := map[string]float64{}
	for _, m := range rows {
		byName[m.Name] = m.P50
	}
	out := map[string]float64{}
	for i, m := range rows {
		if isBaseline(m.Name) {
			continue
		}
		if i+1 < len(rows) && strings.HasPrefix(rows[i+1].Name, "baseline: the same") && rows[i+1].P50 > 0 {
			out[m.Name] = rows[i+1].P50
			continue
		}
		machine := execBaselineRow
		if strings.HasPrefix(m.Name, "Kubernetes") {
			machine = kubernetesBaselineRow
		}
		if p50 := byName[machine]; p50 > 0 {
			out[m.Name] = p50
		}
	}
	return out
}

// comparison compares a run with the committed results, row by row, as
// ratios to each row's baseline in its own run, so that a loaded or a
// faster machine moves both alike; it names the rows that moved by more
// than movedBy.
func comparison(committed, now report) string {
	then, current := baselines(committed.Measurements), baselines(now.Measurements)
	old := map[string]measurement{}
	for _, m := range committed.Measurements {
		old[m.Name] = m
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Compared with the committed results (%s, load %s), each row's p50 as a ratio to its baseline's in the same run:\n\n",
		committed.Machine["date"], committed.Machine["load"])
	fmt.Fprintln(&b, "| measurement | then | now | moved |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- |")
	var moved, unmatched []string
	for _, m := range now.Measurements {
		if isBaseline(m.Name) {
			continue
		}
		was, ok := old[m.Name]
		base, wasBase := current[m.Name], then[m.Name]
		if !ok || base == 0 || wasBase == 0 || was.P50 == 0 {
			unmatched = append(unmatched, m.Name)
			continue
		}
		ratioThen, ratioNow := was.P50/wasBase, m.P50/base
		change := ratioNow/ratioThen - 1
		verdict := fmt.Sprintf("%+.0f%%", change*100)
		if change > movedBy || change < -movedBy {
			verdict += " (moved)"
			moved = append(moved, fmt.Sprintf("%s (%+.0f%%)", m.Name, change*100))
		}
		fmt.Fprintf(&b, "| %s | %.3g | %.3g | %s |\n", m.Name, ratioThen, ratioNow, verdict)
	}
	b.WriteString("\n")
	if len(moved) == 0 {
		fmt.Fprintf(&b, "No row moved by more than a third.\n")
	} else {
		fmt.Fprintf(&b, "Moved by more than a third (slower when positive): %s.\n", strings.Join(moved, "; "))
	}
	if len(unmatched) > 0 {
		fmt.Fprintf(&b, "Not compared (not in the committed results, or without a baseline in one of the runs): %s.\n", strings.Join(unmatched, "; "))
	}
	return b.String()
}

// readReport reads the results a run compares itself with; ok is false
// when there are none.
func readReport(path string) (r report, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return report{}, false, nil
	}
	if err != nil {
		return report{}, false, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return report{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return r, true, nil
}

package main

import (
	"strings"
	"testing"
)

// A row is compared as a ratio to its baseline in its own run: a machine
// twice as slow moves nothing; a row slower against the same baseline
// moves, and is named.
func TestComparisonUsesSameRunBaselines(t *testing.T) {
	committed := report{Machine: map[string]string{"date": "2026-11-27", "load": "1.0"}, Measurements: []measurement{
		{Name: "read_file 4 KiB", P50: 0.5},
		{Name: execBaselineRow, P50: 50},
		{Name: "first call", P50: 200},
		{Name: "baseline: the same, --lazy", P50: 400},
		{Name: "Kubernetes: read_file 4 KiB", P50: 1},
		{Name: kubernetesBaselineRow, P50: 100},
		{Name: "gone", P50: 1},
	}}
	now := report{Measurements: []measurement{
		{Name: "read_file 4 KiB", P50: 1},              // twice as slow, on a machine twice as slow: unmoved
		{Name: execBaselineRow, P50: 100},              // the machine, twice as slow
		{Name: "first call", P50: 400},                 // against its own baseline, unmoved...
		{Name: "baseline: the same, --lazy", P50: 200}, // ...which got faster: moved
		{Name: "Kubernetes: read_file 4 KiB", P50: 1.2},
		{Name: kubernetesBaselineRow, P50: 100},
		{Name: "new row", P50: 3},
	}}
	got := comparison(committed, now)
	for _, want := range []string{"| read_file 4 KiB | 0.01 | 0.01 | +0% |", "| first call | 0.5 | 2 | +300% (moved) |",
		"| Kubernetes: read_file 4 KiB | 0.01 | 0.012 | +20% |", "Moved by more than a third (slower when positive): first call (+300%).",
		"Not compared (not in the committed results, or without a baseline in one of the runs): new row."} {
		if !strings.Contains(got, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| baseline:") {
		t.Errorf("a baseline row was compared:\n%s", got)
	}
	same := comparison(committed, committed)
	if !strings.Contains(same, "No row moved by more than a third.") {
		t.Errorf("a run compared with itself:\n%s", same)
	}
}

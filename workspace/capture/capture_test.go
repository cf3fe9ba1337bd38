package capture

import (
	"errors"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/wire"
)

func TestLargestNamesTheBiggestFilesFirst(t *testing.T) {
	entries := []wire.ScanEntry{
		{Path: wire.NameOf("a"), Size: 10},
		{Path: wire.NameOf("b"), Size: 3000},
		{Path: wire.NameOf("c"), Size: 200},
		{Path: wire.NameOf("d"), Size: 1 << 20},
	}
	got := largest(entries, []int{0, 1, 2}, 2)
	if !strings.HasPrefix(got, "b ") || !strings.Contains(got, ", c ") || strings.Contains(got, "a ") || strings.Contains(got, "d ") {
		t.Fatalf("largest = %q, want b then c, of the files to fetch only", got)
	}
}

func TestGrewErrorSaysACommandWroteTheFile(t *testing.T) {
	cause := errors.New("over the cap")
	if err := grewError("log", 100, 50, cause); !errors.Is(err, cause) || strings.Contains(err.Error(), "grew") {
		t.Errorf("a file that did not grow: %v", err)
	}
	if err := grewError("log", 100, 5000, cause); !errors.Is(err, cause) || !strings.Contains(err.Error(), "grew") {
		t.Errorf("a file that grew: %v", err)
	}
}

func TestCheckpointErrorAdvisesOnTheStoresLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"disk full", checkpoints.ErrDiskFull, "workspace_checkpoint_delete"},
		{"over the cap", checkpoints.ErrOverCap, "--checkpoint-limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkpointError(tc.err)
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkpointError(%v) = %v, want it wrapped with %q", tc.err, err, tc.want)
			}
		})
	}
	other := errors.New("other")
	if err := checkpointError(other); err != other {
		t.Errorf("checkpointError changed an unrelated error: %v", err)
	}
}

package wordfreq

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTop(t *testing.T) {
	got := Top("The cat and the hat. THE end, and the cat!", 3)
	want := []Count{{"the", 4}, {"and", 2}, {"cat", 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Top (-want +got):\n%s", diff)
	}
}

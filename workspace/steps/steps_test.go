package steps

import (
	"regexp"
	"testing"
)

func TestTimesListsEachStepInOrder(t *testing.T) {
	times := Start()
	times.Done("create")
	times.Done("start")
	if got := times.String(); !regexp.MustCompile(`^create=\d+ms start=\d+ms$`).MatchString(got) {
		t.Errorf("steps %q, want create then start, each in ms", got)
	}
}

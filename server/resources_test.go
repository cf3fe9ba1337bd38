package server

import (
	"slices"
	"testing"
)

func TestSubscriptionsAffectedByAChange(t *testing.T) {
	subs := newSubscriptions()
	for _, uri := range []string{SnapshotURI, fileURI("src/a.py"), fileURI("src/lib/b.py"), fileURI("srcx/c.py")} {
		subs.add("s1", uri)
	}
	subs.add("s2", fileURI("src/a.py"))

	for _, tc := range []struct {
		paths []string
		want  []string
	}{
		{[]string{"src/a.py"}, []string{SnapshotURI, fileURI("src/a.py")}},
		{[]string{"src"}, []string{SnapshotURI, fileURI("src/a.py"), fileURI("src/lib/b.py")}},
		{[]string{"other.txt"}, []string{SnapshotURI}},
	} {
		got := subs.affected("s1", tc.paths)
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("affected(%q) = %q, want %q", tc.paths, got, tc.want)
		}
	}
	subs.remove("s1", SnapshotURI)
	subs.drop("s2")
	if got := subs.affected("s1", []string{"x"}); len(got) != 0 {
		t.Errorf("after unsubscribe: %q", got)
	}
	if got := subs.affected("s2", []string{"src/a.py"}); len(got) != 0 {
		t.Errorf("after the session ended: %q", got)
	}
}

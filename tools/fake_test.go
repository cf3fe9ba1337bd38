package tools

import "fmt"

// recorder notes the calls a fake receives, "op args" in order, and
// answers every one with err.
type recorder struct {
	err   error
	calls []string
}

func (r *recorder) note(format string, args ...any) {
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

// fakeSession is every fake at once, for the tests that run one table
// against every tool; a test of one tool fakes only what that tool takes.
type fakeSession struct {
	*fakeFiles
	*fakePython
	*fakeCommands
	*fakeContainer
	*fakeJobs
	*fakeChanges
	*fakePorts
	*fakeCheckpoints
	*fakeHandoffs
	*fakeState
}

func newFakeSession() *fakeSession {
	return &fakeSession{&fakeFiles{}, &fakePython{}, &fakeCommands{}, &fakeContainer{}, &fakeJobs{},
		&fakeChanges{}, &fakePorts{}, &fakeCheckpoints{}, &fakeHandoffs{}, &fakeState{}}
}

// reached counts every call any of the fakes received.
func (f *fakeSession) reached() int {
	n := len(f.fakeFiles.calls) + len(f.edits) + len(f.greps) + len(f.python) + len(f.fakeCommands.calls) + len(f.execs) +
		f.starts + f.resets
	for _, r := range []*recorder{&f.fakePython.recorder, &f.fakeContainer.recorder, &f.fakeJobs.recorder, &f.fakeChanges.recorder,
		&f.fakePorts.recorder, &f.fakeCheckpoints.recorder, &f.fakeHandoffs.recorder, &f.fakeState.recorder} {
		n += len(r.calls)
	}
	return n
}

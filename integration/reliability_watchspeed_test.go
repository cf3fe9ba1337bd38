package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stormSeconds bounds how long an eventStorm runs: far longer than the
// file calls made during it take, however fast or slow the machine, so a
// storm that reaches it means the calls waited for the storm to end. (A
// bound in rounds was not: on a quiet machine the rounds ran out first.)
const stormSeconds = 120

// eventStorm is a job that makes inotify events as fast as the container
// lets it until the file stop appears in the workspace, or until it has
// run stormSeconds; it writes .storm-running once running and, at its end,
// "ROUNDS stopped" or "ROUNDS bound" to /tmp/storm-result.
type eventStorm struct {
	name, setup, round string
	// after is a file a command writes when the storm is over: it must be
	// reported under that name, so the watch followed every rename.
	after string
}

func (s eventStorm) script() string {
	return fmt.Sprintf(`i=0; why=bound; end=$(($(date +%%s) + %d)); while [ "$(date +%%s)" -lt $end ]; do [ -e stop ] && why=stopped && break; %s; [ $i -eq 0 ] && echo x > .storm-running; i=$((i+1)); done; echo "$i $why" > /tmp/storm-result`,
		stormSeconds, s.round)
}

// eventStorms are the commands that make the most events: a directory
// swapped for a link and back (TestReliabilityEscapes' race), 10,000 files
// written, an npm install's staging directories moved into place and
// removed, and a tree of 100 directories renamed back and forth.
var eventStorms = []eventStorm{
	{name: "swap", after: "d/after.txt",
		setup: "mkdir -p d/outside-w && echo inside > d/canary.txt && mv d realdir",
		round: "ln -s /tmp d; rm d; mv realdir d; mv d realdir"},
	{name: "10,000 files", after: "burst/after.txt",
		setup: "true",
		round: `rm -rf burst && mkdir burst && j=0; while [ $j -lt 10000 ] && [ ! -e stop ]; do echo x > burst/f$j; j=$((j+1)); done`},
	{name: "npm churn", after: "nm/after.txt",
		setup: "mkdir -p nm/.staging",
		round: `s=nm/.staging/p$i; mkdir -p $s/lib/sub $s/bin; echo '{}' > $s/package.json; echo x > $s/lib/index.js; echo y > $s/lib/sub/a.js; mv $s nm/p$i; [ $((i%20)) -eq 19 ] && rm -rf nm/p*; true`},
	{name: "renames", after: "a/s7/t/after.txt",
		setup: "i=0; while [ $i -lt 50 ]; do mkdir -p a/s$i/t && echo x > a/s$i/t/f; i=$((i+1)); done",
		round: "mv a b; mv b a"},
}

// stormCalls is how many read_file and write_file pairs run during a storm.
const stormCalls = 100

// TestReliabilityWatchSpeed: file tools called while a job makes inotify
// events as fast as it can are answered while the job runs, not after it
// ends, and the watch still reports the job's tree under its final names.
func TestReliabilityWatchSpeed(t *testing.T) {
	var measured []string
	broken := 0
	for _, storm := range eventStorms {
		t.Run(storm.name, func(t *testing.T) {
			figures, ok := fileCallsDuringStorm(t, storm)
			if !ok {
				broken++
			}
			measured = append(measured, storm.name+": "+figures)
		})
	}
	recordPromise(promiseFigure{
		Class: "file calls during an event storm: read_file and write_file while a job swaps a directory for a link in a loop, writes 10,000 files again and again, " +
			"moves npm-like staging directories into place, or renames a tree of 100 directories back and forth, with the workspace watched",
		Tried: len(eventStorms), Broken: broken,
		Measured: strings.Join(measured, "; "),
	})
}

// fileCallsDuringStorm makes stormCalls pairs of calls while storm runs
// as a job, and says what it measured and whether the promise held.
func fileCallsDuringStorm(t *testing.T, storm eventStorm) (string, bool) {
	p := start(t, startOptions{})
	if r := p.run("sh", "-c", "echo inside > f.txt && mkdir w && "+storm.setup); r.ExitCode != 0 {
		t.Fatalf("setup: %+v", r)
	}
	job := p.shell(map[string]any{"command": []string{"sh", "-c", storm.script()}, "background": true}).Job
	waitUntil(t, time.Minute, "the storm to run", func() bool { return !p.call("read_file", map[string]any{"file_path": ".storm-running"}).IsError })
	var took []time.Duration
	failed := 0
	for i := range stormCalls {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"file_path": "f.txt"}},
			{"write_file", map[string]any{"file_path": "w/out.txt", "content": strconv.Itoa(i)}},
		} {
			began := time.Now()
			res := p.call(c.tool, c.args)
			took = append(took, time.Since(began))
			if res.IsError {
				failed++
				t.Errorf("%s during the storm: %s", c.tool, textOf(res))
			}
		}
	}
	p.call("write_file", map[string]any{"file_path": "stop", "content": ""})
	p.waitJob(job, 3*time.Minute)
	result := strings.Fields(p.run("cat", "/tmp/storm-result").Stdout)
	ok := failed == 0
	if len(result) != 2 || result[1] != "stopped" {
		ok = false
		t.Errorf("the storm ran to its end (%q) before %d file calls were answered: they waited for it", result, 2*stormCalls)
	}
	p.run("sh", "-c", "[ -e realdir ] && mv realdir d; true")
	// A job's change there reaches a subscriber of the file (the snapshot
	// may be full): the watch followed the tree to its final names.
	uri := "wink://workspace/files/" + storm.after
	u := p.listenForUpdates(uri)
	p.shell(map[string]any{"command": []string{"sh", "-c", "sleep 1; echo after > " + storm.after}, "background": true})
	heard := func() bool { return u.count(uri) > 0 }
	waitUntil(t, 30*time.Second, "the job's change after the storm notified", func() bool { return heard() || p.snapshot().Watch.State != "full" })
	if st := p.snapshot().Watch; !heard() || st.State != "full" {
		ok = false
		t.Errorf("after the storm, a job's change of %s: notified %v, watch %+v", storm.after, heard(), st)
	}
	rounds := "?"
	if len(result) > 0 {
		rounds = result[0]
	}
	figures := fmt.Sprintf("%d calls during %s rounds, p50 %.1f ms, p99 %.1f ms, max %.1f ms", len(took), rounds,
		percentile(took, 50), percentile(took, 99), percentile(took, 100))
	t.Logf("%s: %s", storm.name, figures)
	return figures, ok
}

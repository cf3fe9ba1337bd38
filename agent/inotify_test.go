//go:build linux

package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// holdInotify is the test binary as a command holding inotify
// descriptors: hold-inotify INSTANCES DIR makes that many instances, each
// watching every directory under DIR, says "held" and sleeps.
func holdInotify(args []string) int {
	n, _ := strconv.Atoi(args[0])
	dirs, _ := os.ReadDir(args[1])
	for range n {
		fd, err := unix.InotifyInit1(0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, d := range dirs {
			if _, err := unix.InotifyAddWatch(fd, filepath.Join(args[1], d.Name()), unix.IN_CREATE); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	fmt.Println("held")
	time.Sleep(time.Hour)
	return 0
}

// watchDirs makes n directories to watch, outside any workspace.
func watchDirs(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		if err := os.Mkdir(filepath.Join(dir, strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGuardKillsAJobPastItsShare: a job's process holding more inotify
// instances and watches than the workspace's share is counted, killed,
// and told why in the job's standard error; one within the share is left.
func TestGuardKillsAJobPastItsShare(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	self, _ := os.Executable()
	watched := watchDirs(t, 10)
	start := func(instances int) *job {
		res, werr := a.jobs.startJob(wire.JobStartArgs{Exec: wire.ExecArgs{Argv: []string{self, "hold-inotify", strconv.Itoa(instances), watched}}, WaitMillis: 10_000})
		if werr != nil || !strings.Contains(res.Stdout.Data, "held") {
			t.Fatalf("job: %+v %v", res, werr)
		}
		j, _ := a.jobs.get(res.Job.ID)
		return j
	}
	small, greedy := start(1), start(5)
	procs, _ := readProcs()
	sups := a.supervisors.live()
	byInstances := map[int]int{}
	for _, h := range readHolders(procs, sups, 1000) {
		byInstances[h.instances] += h.watches
	}
	if byInstances[1] != 10 || byInstances[5] != 50 {
		t.Fatalf("holders counted: %v (instances → watches), want 1 → 10 and 5 → 50", byInstances)
	}
	a.guard.checkInotify(inotifyShare{instances: 4, watches: 1000}, 8, 0)
	select {
	case <-greedy.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the greedy job still runs")
	}
	in := greedy.info()
	errs, _ := greedy.errs.page(0, 4096, false)
	if *in.ExitCode != 128+int(unix.SIGKILL) || !strings.Contains(errs.Data, "wink-mcp killed process") ||
		!strings.Contains(errs.Data, "held 6 inotify instances and 60 watches (counted up to the share), past its share of 4 and 1000") {
		t.Errorf("the greedy job ended %+v with stderr %q", in, errs.Data)
	}
	if !small.running() {
		t.Error("the job within the share was killed too")
	}
}

// TestGuardTellsAForegroundCommand: a foreground command's process killed
// for its inotify use has its result say why.
func TestGuardTellsAForegroundCommand(t *testing.T) {
	dir := t.TempDir()
	a, err := New(Config{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	self, _ := os.Executable()
	watched := watchDirs(t, 3)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				a.guard.checkInotify(inotifyShare{instances: 1, watches: 1}, 8, 0)
			}
		}
	}()
	res, werr := a.exec(t.Context(), wire.ExecArgs{Argv: []string{self, "hold-inotify", "2", watched}, TimeoutMillis: 30_000, Capture: true, OutputLimit: 4096}, nil)
	if werr != nil {
		t.Fatal(werr)
	}
	if res.ExitCode != 128+int(unix.SIGKILL) || !strings.Contains(res.Stderr, "wink-mcp killed process") || !strings.Contains(res.Stderr, "past its share of 1 and 1") {
		t.Errorf("result: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
}

// TestOverShare: the greediest holders go first, hidden ones never, until
// what is left fits the share.
func TestOverShare(t *testing.T) {
	share := inotifyShare{instances: 4, watches: 100}
	h := func(pid, instances, watches int, hidden bool) inotifyHolder {
		return inotifyHolder{proc: proc{pid: pid}, instances: instances, watches: watches, hidden: hidden}
	}
	for _, tc := range []struct {
		name    string
		holders []inotifyHolder
		want    []int
	}{
		{name: "within", holders: []inotifyHolder{h(1, 2, 50, false), h(2, 2, 50, false)}, want: nil},
		{name: "one greedy", holders: []inotifyHolder{h(1, 1, 10, false), h(2, 100, 0, false)}, want: []int{2}},
		{name: "watches", holders: []inotifyHolder{h(1, 1, 90, false), h(2, 1, 20, false)}, want: []int{1}},
		{name: "many small", holders: []inotifyHolder{h(1, 2, 0, false), h(2, 2, 0, false), h(3, 3, 0, false)}, want: []int{3}},
		{name: "hidden left", holders: []inotifyHolder{h(1, 0, 0, true), h(2, 5, 0, false)}, want: []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kill, _, _ := overShare(tc.holders, share)
			var got []int
			for _, k := range kill {
				got = append(got, k.pid)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("killed %v, want %v", got, tc.want)
			}
		})
	}
}

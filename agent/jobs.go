//go:build linux

package agent

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// Limits of jobs, per container.
const (
	// MaxRunningJobs bounds the jobs running at once.
	MaxRunningJobs = 16
	// maxKeptRecords bounds the finished jobs and kept foreground outputs
	// remembered; the oldest are forgotten first, freeing their files.
	maxKeptRecords = 32
)

// jobs are the background commands of an agent and the kept outputs of
// foreground ones, and serve the job operations (OpJobStart and the rest).
// IDs carry a token drawn when the agent starts, so an ID from an earlier
// container is never mistaken for a job of this one. It is safe for
// concurrent use: mu guards the records, each job's own lock its state.
type jobs struct {
	jobDeps

	mu    sync.Mutex
	token string
	seq   int
	all   map[string]*job
	order []string // IDs in the order they were made
}

// jobDeps is what the jobs use of the agent.
type jobDeps struct {
	// workspace is the directory the jobs' output files are kept on.
	workspace string
	// resolveDir checks a job's working directory (see Agent.resolveDir).
	resolveDir  func(dir string) (string, *wire.Error)
	supervisors *supervisors
	// watch is told when a job ends.
	watch *watcher
	disks *disks
	log   *slog.Logger
}

// newJobs returns an empty set of jobs with a token of its own.
func newJobs(deps jobDeps) *jobs {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return &jobs{jobDeps: deps, token: hex.EncodeToString(b), all: map[string]*job{}}
}

// job is one background command, or the kept output of a foreground one.
type job struct {
	id, kind  string
	argv      []string
	dir       string
	started   time.Time
	out, errs *spool
	done      chan struct{} // closed once it ended and its output is complete

	mu       sync.Mutex
	sup      *supervisor // nil for a kept foreground output
	stdin    *os.File    // nil once closed
	ended    time.Time
	exitCode int
	endedBy  string
	startErr *wire.Error // why the command could not start, if it could not
	// oomBefore is oomKills() at its start; oom what the memory limit
	// killed while it ran, once it ended.
	oomBefore int64
	oom       *wire.OOM
	// full says which filesystems it left full, once it ended.
	full fullDisks
}

// info describes j.
func (j *job) info() wire.JobInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	in := wire.JobInfo{ID: j.id, Argv: j.argv, Dir: j.dir, Kind: j.kind, State: wire.JobRunning,
		StartedUnixMillis: j.started.UnixMilli(), EndedBy: j.endedBy, StdinOpen: j.stdin != nil, OOM: j.oom}
	end := time.Now()
	if !j.ended.IsZero() {
		end = j.ended
		in.State = wire.JobExited
		code := j.exitCode
		in.ExitCode = &code
	}
	in.DurationMillis = end.Sub(j.started).Milliseconds()
	for _, s := range []*spool{j.out, j.errs} {
		size, dropped, why := s.state()
		if s == j.out {
			in.StdoutBytes = size + dropped
		} else {
			in.StderrBytes = size + dropped
		}
		in.DroppedBytes += dropped
		if why != "" {
			in.DroppedReason = why
		}
	}
	return in
}

// running reports whether j has not ended.
func (j *job) running() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ended.IsZero()
}

// add registers j under a new ID, forgetting the oldest finished records
// past maxKeptRecords. A background job is refused when MaxRunningJobs run.
func (js *jobs) add(j *job) *wire.Error {
	js.mu.Lock()
	defer js.mu.Unlock()
	if j.kind == "job" {
		running := 0
		for _, other := range js.all {
			if other.running() {
				running++
			}
		}
		if running >= MaxRunningJobs {
			return wire.Errorf(wire.CodeInvalid, "%d jobs are running in this workspace, the most allowed: wait for one to end (job action=status) or stop one (job action=signal)", running)
		}
	}
	js.seq++
	j.id = js.token + "-" + strconv.Itoa(js.seq)
	js.all[j.id] = j
	js.order = append(js.order, j.id)
	kept := 0
	for i := len(js.order) - 1; i >= 0; i-- {
		old := js.all[js.order[i]]
		if old.running() {
			continue
		}
		if kept++; kept > maxKeptRecords {
			old.out.close()
			old.errs.close()
			delete(js.all, old.id)
			js.order = slices.Delete(js.order, i, i+1)
		}
	}
	return nil
}

// get returns the job with id, or an error that says why there is none.
func (js *jobs) get(id string) (*job, *wire.Error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if j, ok := js.all[id]; ok {
		return j, nil
	}
	return nil, wire.Errorf(wire.CodeNotFound, "no job %q in this container: job IDs come from podman_shell (background=true, or a truncated output); "+
		"finished jobs past the %d most recent are forgotten, and jobs do not survive the container being recreated (job action=list shows what there is)", id, maxKeptRecords)
}

// list returns every job, oldest first.
func (js *jobs) list() []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]*job, 0, len(js.order))
	for _, id := range js.order {
		out = append(out, js.all[id])
	}
	return out
}

// keepOutput registers the spilled output of a foreground command and
// returns its record's ID, or "" when nothing was spilled.
func (js *jobs) keepOutput(argv []string, dir string, start time.Time, out *runOutcome) string {
	if out.stdout.spill == nil && out.stderr.spill == nil {
		return ""
	}
	j := &job{kind: "command", argv: argv, dir: dir, started: start, done: make(chan struct{}),
		ended: start.Add(out.duration), exitCode: out.exitCode, endedBy: out.endedBy, oom: out.oom, full: out.full}
	j.out, j.errs = keptStream(out.stdout), keptStream(out.stderr)
	close(j.done)
	if js.add(j) != nil {
		j.out.close()
		j.errs.close()
		return ""
	}
	return j.id
}

// keptStream is a capture's whole output: its spool, or else a spool
// holding what it kept.
func keptStream(c *capture) *spool {
	if c.spill != nil {
		return c.spill
	}
	s := &spool{}
	if f, err := openSpool(c.spillDir); err == nil {
		s = f
		_, _ = s.Write(c.buf)
	}
	return s
}

// startJob answers OpJobStart.
func (js *jobs) startJob(args wire.JobStartArgs) (*wire.JobStartResult, *wire.Error) {
	ex := args.Exec
	if len(ex.Argv) == 0 || ex.Argv[0] == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "command is empty")
	}
	dir, werr := js.resolveDir(ex.Dir)
	if werr != nil {
		return nil, werr
	}
	j := &job{kind: "job", argv: ex.Argv, dir: dir, done: make(chan struct{})}
	var err error
	if j.out, err = openSpool(js.workspace); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "making the job's output file: %v", err)
	}
	if j.errs, err = openSpool(js.workspace); err != nil {
		j.out.close()
		return nil, wire.Errorf(wire.CodeInternal, "making the job's output file: %v", err)
	}
	j.errs.reserve(stderrReserve)
	if werr := js.add(j); werr != nil {
		j.out.close()
		j.errs.close()
		return nil, werr
	}
	if werr := js.launch(j, ex, args.CloseStdin); werr != nil {
		j.mu.Lock()
		j.ended, j.exitCode = time.Now(), 127
		j.mu.Unlock()
		close(j.done)
		return nil, werr
	}
	j.awaitFirstOutput(time.Duration(args.WaitMillis) * time.Millisecond)
	j.mu.Lock()
	startErr := j.startErr
	j.mu.Unlock()
	if startErr != nil {
		return nil, startErr
	}
	res := &wire.JobStartResult{Job: js.jobInfo(j)}
	res.Stdout, _ = j.out.page(0, firstOutputBytes, false)
	res.Stderr, _ = j.errs.page(0, firstOutputBytes, false)
	return res, nil
}

// awaitFirstOutput waits until j has written something and a moment
// more, or has ended, or wait has passed.
func (j *job) awaitFirstOutput(wait time.Duration) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		out, _, _ := j.out.state()
		errs, _, _ := j.errs.state()
		if out+errs > 0 {
			select { // let the first lines arrive whole
			case <-j.done:
			case <-deadline.C:
			case <-time.After(100 * time.Millisecond):
			}
			return
		}
		select {
		case <-j.done:
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// jobCleanupTimeout bounds the killing of what an ended job left.
const jobCleanupTimeout = 10 * time.Second

// firstOutputBytes is how much of each stream job start returns.
const firstOutputBytes = 4 << 10

// launch hands j's command to a supervisor of its own and starts the
// goroutines that carry its streams and wait for its end.
func (js *jobs) launch(j *job, ex wire.ExecArgs, closeStdin bool) *wire.Error {
	sup, err := js.supervisors.spawn()
	if err != nil {
		return wire.Errorf(wire.CodeInternal, "%v", err)
	}
	st, err := openStreams(true, false)
	if err != nil {
		sup.ctl.Close()
		return wire.Errorf(wire.CodeInternal, "creating the job's pipes: %v", err)
	}
	j.started, j.oomBefore = time.Now(), oomKills()
	err = send(sup.ctl, commandSpec{Argv: ex.Argv, Dir: j.dir, Env: mergeEnv(os.Environ(), ex.Env)}, st.commandEnds())
	st.closeCommandEnds()
	if err != nil {
		st.closeAll()
		killTree(sup.pid, cleanupTimeout)
		return wire.Errorf(wire.CodeInternal, "handing the job to its supervisor: %v", err)
	}
	replies := make(chan replyOrError, 1)
	go func() {
		var r commandReply
		fds, err := receive(sup.ctl, &r)
		for _, fd := range fds {
			unix.Close(fd)
		}
		replies <- replyOrError{r, err}
	}()
	j.sup, j.stdin = sup, st.stdinW
	st.stdinW = nil // the job owns it now, and st.copy leaves it alone
	copied := st.copy("", j.out, j.errs, nil)
	if ex.Stdin != "" {
		if _, err := j.stdin.WriteString(ex.Stdin); err != nil {
			js.log.Debug("writing a job's first input", "job", j.id, "err", err)
		}
	}
	if closeStdin {
		j.closeStdin()
	}
	go js.superviseJob(j, st, copied, replies, time.Duration(ex.TimeoutMillis)*time.Millisecond, time.Duration(ex.GraceMillis)*time.Millisecond)
	return nil
}

// superviseJob waits for j to end (or its timeout to pass), records how it
// ended, waits for its output and lets its supervisor go.
func (js *jobs) superviseJob(j *job, st *streams, copied <-chan struct{}, replies chan replyOrError, timeout, grace time.Duration) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var got replyOrError
	endedBy, timedOut := "", false
	select {
	case got = <-replies:
	case <-expired:
		timedOut = true
		got, endedBy = j.sup.stopCommand(replies, grace)
	}
	st.wait(copied, waitDelay)
	full := js.disks.fullNow()
	j.mu.Lock()
	j.ended, j.full = time.Now(), full
	switch {
	case timedOut:
		j.exitCode = 124
	case got.err != nil:
		j.exitCode = 128 + int(unix.SIGKILL)
	case got.reply.Error != nil:
		j.exitCode, j.startErr = 127, got.reply.Error
		_, _ = j.errs.Write([]byte(got.reply.Error.Message + "\n"))
	default:
		j.exitCode = got.reply.ExitCode
	}
	if j.endedBy == "" {
		j.endedBy = endedBy
	}
	j.oom = oomReport(j.oomBefore, j.exitCode, j.endedBy != "")
	if j.stdin != nil {
		j.stdin.Close()
		j.stdin = nil
	}
	sup := j.sup
	j.mu.Unlock()
	if got.err != nil {
		killTree(sup.pid, cleanupTimeout)
	} else {
		// What the supervisor could not kill in its own clean-up (a fork
		// bomb outrunning it) must not outlive the job as init's children.
		killDescendants(sup.pid, jobCleanupTimeout, nil)
	}
	sup.ctl.Close() // the supervisor exits; jobs do not share supervisors
	js.watch.commandEnded()
	close(j.done)
}

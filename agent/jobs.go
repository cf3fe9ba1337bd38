//go:build linux

package agent

import (
	"crypto/rand"
	"encoding/hex"
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
// foreground ones. IDs carry a token drawn when the agent starts, so an ID
// from an earlier container is never mistaken for a job of this one.
type jobs struct {
	mu    sync.Mutex
	token string
	seq   int
	all   map[string]*job
	order []string // IDs in the order they were made
}

func newJobs() *jobs {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return &jobs{token: hex.EncodeToString(b), all: map[string]*job{}}
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
func (a *Agent) keepOutput(argv []string, dir string, start time.Time, out *runOutcome) string {
	if out.stdout.spill == nil && out.stderr.spill == nil {
		return ""
	}
	j := &job{kind: "command", argv: argv, dir: dir, started: start, done: make(chan struct{}),
		ended: start.Add(out.duration), exitCode: out.exitCode, endedBy: out.endedBy, oom: out.oom, full: out.full}
	j.out, j.errs = keptStream(out.stdout), keptStream(out.stderr)
	close(j.done)
	if a.jobs.add(j) != nil {
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
func (a *Agent) startJob(args wire.JobStartArgs) (*wire.JobStartResult, *wire.Error) {
	ex := args.Exec
	if len(ex.Argv) == 0 || ex.Argv[0] == "" {
		return nil, wire.Errorf(wire.CodeBadRequest, "command is empty")
	}
	dir, werr := a.resolveDir(ex.Dir)
	if werr != nil {
		return nil, werr
	}
	j := &job{kind: "job", argv: ex.Argv, dir: dir, done: make(chan struct{})}
	var err error
	if j.out, err = openSpool(a.workspace); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "making the job's output file: %v", err)
	}
	if j.errs, err = openSpool(a.workspace); err != nil {
		j.out.close()
		return nil, wire.Errorf(wire.CodeInternal, "making the job's output file: %v", err)
	}
	j.errs.reserve(stderrReserve)
	if werr := a.jobs.add(j); werr != nil {
		j.out.close()
		j.errs.close()
		return nil, werr
	}
	if werr := a.launch(j, ex, args.CloseStdin); werr != nil {
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
	res := &wire.JobStartResult{Job: a.jobInfo(j)}
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
func (a *Agent) launch(j *job, ex wire.ExecArgs, closeStdin bool) *wire.Error {
	sup, err := a.spawnSupervisor()
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
			a.log.Debug("writing a job's first input", "job", j.id, "err", err)
		}
	}
	if closeStdin {
		j.closeStdin()
	}
	go a.superviseJob(j, st, copied, replies, time.Duration(ex.TimeoutMillis)*time.Millisecond, time.Duration(ex.GraceMillis)*time.Millisecond)
	return nil
}

// superviseJob waits for j to end (or its timeout to pass), records how it
// ended, waits for its output and lets its supervisor go.
func (a *Agent) superviseJob(j *job, st *streams, copied <-chan struct{}, replies chan replyOrError, timeout, grace time.Duration) {
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
		got, endedBy = a.stopCommand(j.sup, replies, grace)
	}
	st.wait(copied, waitDelay)
	full := a.fullNow()
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
	a.watch.commandEnded()
	close(j.done)
}

// closeStdin closes j's standard input.
func (j *job) closeStdin() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stdin != nil {
		j.stdin.Close()
		j.stdin = nil
	}
}

// jobSignals are the signals job action=signal may send.
var jobSignals = map[string]unix.Signal{"TERM": unix.SIGTERM, "INT": unix.SIGINT, "HUP": unix.SIGHUP, "KILL": unix.SIGKILL}

// signalJob answers OpJobSignal: the signal reaches every process of the
// job's tree, and nothing else. TERM with a grace is followed by SIGKILL
// when the job has not ended within it. It waits up to a second (or the
// grace) for the job to end.
func (a *Agent) signalJob(args wire.JobSignalArgs) (*wire.JobInfo, *wire.Error) {
	j, werr := a.jobs.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	sig, ok := jobSignals[args.Signal]
	if !ok {
		return nil, wire.Errorf(wire.CodeInvalid, "signal %q: must be TERM, INT, HUP or KILL", args.Signal)
	}
	j.mu.Lock()
	if j.sup == nil || !j.ended.IsZero() {
		j.mu.Unlock()
		in := a.jobInfo(j)
		return &in, nil // already ended: nothing to signal, the info says how it ended
	}
	sup := j.sup
	if sig == unix.SIGKILL {
		killDescendants(sup.pid, cleanupTimeout, nil)
		j.endedBy = "SIGKILL"
	} else {
		signalDescendants(sup.pid, sig)
		j.endedBy = "SIG" + args.Signal
	}
	j.mu.Unlock()
	wait := time.Second
	if sig == unix.SIGTERM && args.GraceMillis > 0 {
		wait = time.Duration(args.GraceMillis) * time.Millisecond
	}
	select {
	case <-j.done:
	case <-time.After(wait):
		if sig == unix.SIGTERM && args.GraceMillis > 0 {
			j.mu.Lock()
			if j.ended.IsZero() {
				killDescendants(sup.pid, cleanupTimeout, nil)
				j.endedBy = "SIGKILL"
			}
			j.mu.Unlock()
			<-j.done
		} else {
			j.mu.Lock()
			if j.ended.IsZero() {
				j.endedBy = "" // it survived the signal
			}
			j.mu.Unlock()
		}
	}
	in := a.jobInfo(j)
	return &in, nil
}

// stopAllJobs answers OpJobStopAll: every running job gets SIGTERM, then
// SIGKILL after the grace.
func (a *Agent) stopAllJobs(args wire.JobStopAllArgs) (*wire.JobListResult, *wire.Error) {
	var wg sync.WaitGroup
	for _, j := range a.jobs.list() {
		if j.kind == "job" && j.running() {
			wg.Go(func() {
				_, _ = a.signalJob(wire.JobSignalArgs{ID: j.id, Signal: "TERM", GraceMillis: max(args.GraceMillis, 1)})
			})
		}
	}
	wg.Wait()
	return a.listJobs(wire.JobListArgs{})
}

// listJobs answers OpJobList.
func (a *Agent) listJobs(args wire.JobListArgs) (*wire.JobListResult, *wire.Error) {
	res := &wire.JobListResult{Jobs: []wire.JobInfo{}}
	reports := map[fullDisks]*wire.DiskFull{} // the disks are looked at once per list
	for _, j := range a.jobs.list() {
		in := j.info()
		if args.Disk {
			in.DiskFull = a.jobDisks(j, reports)
		}
		res.Jobs = append(res.Jobs, in)
		if in.State == wire.JobRunning && j.kind == "job" {
			res.Running++
			if res.OldestRunningUnixMillis == 0 || in.StartedUnixMillis < res.OldestRunningUnixMillis {
				res.OldestRunningUnixMillis = in.StartedUnixMillis
			}
		}
	}
	return res, nil
}

// jobOutput answers OpJobOutput.
func (a *Agent) jobOutput(args wire.JobOutputArgs) (*wire.JobOutputResult, *wire.Error) {
	j, werr := a.jobs.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	var s *spool
	switch args.Stream {
	case "stdout", "":
		s = j.out
	case "stderr":
		s = j.errs
	default:
		return nil, wire.Errorf(wire.CodeInvalid, "stream %q: must be stdout or stderr", args.Stream)
	}
	if args.Limit <= 0 || args.Offset < 0 || args.Line < 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "offset and line must not be negative, limit must be positive")
	}
	offset := args.Offset
	if args.Line > 0 {
		var err error
		if offset, err = s.lineOffset(args.Line); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, "finding line %d: %v", args.Line, err)
		}
	}
	chunk, err := s.page(offset, args.Limit, args.Base64)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "reading the output: %v", err)
	}
	return &wire.JobOutputResult{Job: a.jobInfo(j), Chunk: chunk}, nil
}

// jobInput answers OpJobInput: it writes to the job's stdin, waiting at
// most inputTimeout for a job that does not read.
func (a *Agent) jobInput(args wire.JobInputArgs) (*wire.JobInputResult, *wire.Error) {
	j, werr := a.jobs.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	j.mu.Lock()
	f := j.stdin
	j.mu.Unlock()
	if f == nil {
		return nil, wire.Errorf(wire.CodeInvalid, "job %s has no open stdin: it ended, its stdin was closed, or it is a foreground command's output", args.ID)
	}
	n := 0
	if args.Data != "" {
		_ = f.SetWriteDeadline(time.Now().Add(inputTimeout))
		var err error
		n, err = f.WriteString(args.Data)
		_ = f.SetWriteDeadline(time.Time{})
		if err != nil {
			return nil, wire.Errorf(wire.CodeInvalid, "wrote %d of %d bytes to job %s's stdin: %v (a job that does not read its input fills the pipe's 64 KiB; the rest was not written)",
				n, len(args.Data), args.ID, unwrapPath(err))
		}
	}
	if args.Close {
		j.closeStdin()
	}
	return &wire.JobInputResult{Job: a.jobInfo(j), Written: n}, nil
}

// inputTimeout bounds a write to a job's stdin.
const inputTimeout = 5 * time.Second

// jobStatus answers OpJobStatus.
func (a *Agent) jobStatus(args wire.JobArgs) (*wire.JobInfo, *wire.Error) {
	j, werr := a.jobs.get(args.ID)
	if werr != nil {
		return nil, werr
	}
	in := a.jobInfo(j)
	return &in, nil
}

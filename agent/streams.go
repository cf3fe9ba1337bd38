//go:build linux

package agent

import (
	"io"
	"os"
	"sync"
	"time"
)

// streams are the pipes of one command: the agent keeps one end of each,
// the command gets the other.
type streams struct {
	stdinR, stdinW *os.File // stdinW is nil when stdin is /dev/null
	outR, outW     *os.File
	errR, errW     *os.File
	resR, resW     *os.File // nil unless the command gets a result descriptor
}

// openStreams creates the pipes; withStdin false gives the command /dev/null.
func openStreams(withStdin, withResult bool) (*streams, error) {
	st := &streams{}
	var err error
	fail := func() (*streams, error) {
		st.closeAll()
		return nil, err
	}
	if withStdin {
		if st.stdinR, st.stdinW, err = os.Pipe(); err != nil {
			return fail()
		}
	} else if st.stdinR, err = os.Open(os.DevNull); err != nil {
		return fail()
	}
	if st.outR, st.outW, err = os.Pipe(); err != nil {
		return fail()
	}
	if st.errR, st.errW, err = os.Pipe(); err != nil {
		return fail()
	}
	if withResult {
		if st.resR, st.resW, err = os.Pipe(); err != nil {
			return fail()
		}
	}
	return st, nil
}

// commandEnds are the descriptors the command gets, in order.
func (st *streams) commandEnds() []*os.File {
	ends := []*os.File{st.stdinR, st.outW, st.errW}
	if st.resW != nil {
		ends = append(ends, st.resW)
	}
	return ends
}

// closeCommandEnds drops the agent's copies of the command's ends, so the
// agent sees end of file when the command's processes are gone.
func (st *streams) closeCommandEnds() {
	for _, f := range st.commandEnds() {
		f.Close()
	}
}

func (st *streams) closeAll() {
	for _, f := range []*os.File{st.stdinR, st.stdinW, st.outR, st.outW, st.errR, st.errW, st.resR, st.resW} {
		if f != nil {
			f.Close()
		}
	}
}

// copy feeds stdin and collects the outputs; the returned channel is closed
// when every output has ended.
func (st *streams) copy(stdin string, stdout, stderr, result io.Writer) <-chan struct{} {
	if st.stdinW != nil {
		go func() {
			_, _ = io.WriteString(st.stdinW, stdin) // EPIPE when the command does not read it
			st.stdinW.Close()
		}()
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(stdout, st.outR) })
	wg.Go(func() { _, _ = io.Copy(stderr, st.errR) })
	if st.resR != nil {
		wg.Go(func() { _, _ = io.Copy(result, io.LimitReader(st.resR, maxControlMessage)) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// wait waits for the outputs to end, at most delay, then closes the
// agent's ends so a stray holding the pipes cannot block the call.
func (st *streams) wait(done <-chan struct{}, delay time.Duration) {
	select {
	case <-done:
	case <-time.After(delay):
	}
	st.closeAll()
	<-done
}

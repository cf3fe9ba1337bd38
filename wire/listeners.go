package wire

import (
	"net"
	"sync"
)

// JoinListeners returns one listener that accepts what any of ls accepts.
// Its Accept fails once any of them fails (the first error), and then it
// closes them all; Close closes them all. Its address is the first's.
func JoinListeners(ls ...net.Listener) net.Listener {
	j := &joined{ls: ls, conns: make(chan net.Conn), failed: make(chan error, 1), done: make(chan struct{})}
	for _, l := range ls {
		go j.pump(l)
	}
	return j
}

type joined struct {
	ls     []net.Listener
	conns  chan net.Conn
	failed chan error
	done   chan struct{}
	once   sync.Once
}

func (j *joined) pump(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			select {
			case j.failed <- err:
			default:
			}
			return
		}
		select {
		case j.conns <- c:
		case <-j.done:
			c.Close()
			return
		}
	}
}

func (j *joined) Accept() (net.Conn, error) {
	select {
	case c := <-j.conns:
		return c, nil
	case err := <-j.failed:
		j.Close()
		return nil, err
	case <-j.done:
		return nil, net.ErrClosed
	}
}

func (j *joined) Close() error {
	var err error
	j.once.Do(func() {
		close(j.done)
		for _, l := range j.ls {
			if e := l.Close(); e != nil && err == nil {
				err = e
			}
		}
	})
	return err
}

func (j *joined) Addr() net.Addr { return j.ls[0].Addr() }

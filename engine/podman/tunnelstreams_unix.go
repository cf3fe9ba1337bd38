//go:build containers_image_openpgp && unix

package podman

import (
	"net"

	"golang.org/x/sys/unix"
)

// receive takes the descriptors ch carries, one a message (the kernel
// closes any more a message brings), until ch or the listener closes.
func (t *tunnelStreams) receive(ch *net.UnixConn) {
	defer ch.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-t.done:
			ch.Close()
		case <-stop:
		}
	}()
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		select { // wait for a place before reading: the agent's next hand-over waits, then takes the tunnel
		case t.held <- struct{}{}:
		case <-t.done:
			return
		}
		_, oobn, _, _, err := ch.ReadMsgUnix(make([]byte, 1), oob)
		var fds []int
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if rights, rerr := unix.ParseUnixRights(&m); rerr == nil {
					fds = append(fds, rights...)
				}
			}
		}
		handed := false
		for _, fd := range fds {
			if !handed {
				handed = t.take(fd)
			} else {
				unix.Close(fd)
			}
		}
		if !handed {
			<-t.held
		}
		if err != nil {
			return
		}
	}
}

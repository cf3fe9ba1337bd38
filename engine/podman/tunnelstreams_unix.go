//go:build containers_image_openpgp && unix

package podman

import (
	"net"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
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
	msg := make([]byte, 1+wire.PortTokenLen)
	for {
		select { // wait for a place before reading: the agent's next hand-over waits, then takes the tunnel
		case t.held <- struct{}{}:
		case <-t.done:
			return
		}
		n, oobn, _, _, err := ch.ReadMsgUnix(msg, oob)
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
			if handed {
				unix.Close(fd)
			} else if n == len(msg) && msg[0] == wire.PortHandTag {
				handed = t.takePort(fd, string(msg[1:]))
			} else if n == 1 && msg[0] == 0 {
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

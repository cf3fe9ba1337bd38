//go:build containers_image_openpgp && windows

package podman

import "net"

// receive closes ch: a Windows server's Podman is a podman machine, whose
// containers take the tunnel on the exec attach, never a socket of this
// machine's (see Engine.OpenTunnel).
func (t *tunnelStreams) receive(ch *net.UnixConn) { ch.Close() }

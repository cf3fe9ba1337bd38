package services

import (
	"io"
	"log/slog"
	"net"
	"testing"
)

// BenchmarkProxyStreamThroughTheRouter measures what Room.Listener costs a
// proxy stream: 8 MiB sent over loopback TCP and read by the listener's
// user, through the router and directly.
func BenchmarkProxyStreamThroughTheRouter(b *testing.B) {
	payload := make([]byte, 8<<20)
	copy(payload, "CONNECT example.org:443 HTTP/1.1\r\n\r\n")
	for _, routed := range []bool{false, true} {
		name := "direct"
		if routed {
			name = "routed"
		}
		b.Run(name, func(b *testing.B) {
			tcp, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var ln net.Listener = tcp
			if routed {
				ln = New(Deps{Log: slog.New(slog.DiscardHandler), Session: func() string { return "s" }}).Listener(tcp)
			}
			defer ln.Close()
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				go func() {
					c, err := net.Dial("tcp", tcp.Addr().String())
					if err != nil {
						return
					}
					_, _ = c.Write(payload)
					c.Close()
				}()
				c, err := ln.Accept()
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, c); n != int64(len(payload)) {
					b.Fatalf("read %d bytes of %d", n, len(payload))
				}
				c.Close()
			}
		})
	}
}

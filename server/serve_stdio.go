package server

import (
	"context"
	"errors"
	"io"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// ServeStdio serves one session over in and out until in ends or ctx is
// done. Only JSON-RPC is written to out; logs go to the Logger. Each request
// is served as soon as it is read, however many are in flight (up to
// mcpgoadapt.MaxStdioInflight); a line over HTTPConfig.MaxBodyBytes is
// answered with an error and skipped; ids come back exactly as the client
// wrote them.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	max := s.cfg.HTTP.MaxBodyBytes
	if max <= 0 {
		max = DefaultMaxBodyBytes
	}
	err := mcpgoadapt.ServeStdio(ctx, s.mcp, in, out, max, s.log, func(ctx context.Context) context.Context { return withStopper(s.requestContext(ctx)) }, interceptor(s))
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

package services

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// describeEnd says how a service's command ended.
func describeEnd(st wire.JobInfo) string {
	if st.ExitCode != nil {
		return fmt.Sprintf("exit code %d", *st.ExitCode)
	}
	if st.EndedBy != "" {
		return "ended by " + st.EndedBy
	}
	return "ended"
}

// tailBytes is how much of the end of each stream tail reads.
const tailBytes = 4096

// tail returns the last n lines of each of the service's streams, or why
// they could not be read.
func (s *service) tail(ctx context.Context, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := s.c.JobStatus(ctx, s.job)
	if err != nil {
		return "(its log could not be read: " + err.Error() + ")"
	}
	var b strings.Builder
	for _, stream := range []struct {
		name  string
		total int64
	}{{"stdout", st.StdoutBytes}, {"stderr", st.StderrBytes}} {
		if stream.total == 0 {
			continue
		}
		out, err := s.c.JobOutput(ctx, wire.JobOutputArgs{ID: s.job, Stream: stream.name, Offset: max(0, stream.total-tailBytes), Limit: tailBytes})
		if err != nil {
			fmt.Fprintf(&b, "[%s could not be read: %v]\n", stream.name, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(out.Chunk.Data, "\n"), "\n")
		if out.Chunk.Offset > 0 && len(lines) > 1 {
			lines = lines[1:] // the first is cut
		}
		lines = lines[max(0, len(lines)-n):]
		fmt.Fprintf(&b, "[%s, last %d lines of %d bytes]\n%s\n", stream.name, len(lines), stream.total, strings.Join(lines, "\n"))
	}
	if b.Len() == 0 {
		return "(it wrote nothing)"
	}
	return b.String()
}

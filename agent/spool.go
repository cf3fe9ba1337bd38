//go:build linux

package agent

import (
	"bufio"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/wink-mcp/wink-mcp/wire"
)

// spool keeps a whole output stream in a file nobody else can name: an
// unnamed file (O_TMPFILE) on the workspace's filesystem, so it counts
// against the session's disk limit but never appears in /workspace or its
// changes, or, where that filesystem has no unnamed files, a file in the
// container's /tmp removed as soon as it is open. Writes never fail: what
// cannot be stored (the disk is full) is counted as dropped, so the
// command is never blocked by its output. It is safe for concurrent use.
type spool struct {
	mu      sync.Mutex
	f       *os.File
	size    int64
	dropped int64
	why     string
	// inTmp says the file is in /tmp, not on the workspace's filesystem.
	inTmp bool
}

// openSpool makes a spool near dir.
func openSpool(dir string) (*spool, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return &spool{f: os.NewFile(uintptr(fd), "output")}, nil
	}
	f, err := os.CreateTemp("", ".wink-output-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name())
	return &spool{f: f, inTmp: true}, nil
}

// stderrReserve is the start of a job's stderr kept on disk for it when
// the job starts: a job whose stdout fills the session's disk still gets
// its error messages stored.
const stderrReserve = 64 << 10

// reserve allocates the spool's first n bytes on disk without changing its
// size, so that writes within them need no free space. A filesystem that
// cannot allocate ahead leaves the spool as it was.
func (s *spool) reserve(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_ = unix.Fallocate(int(s.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n)
	}
}

// Write stores p, or counts it as dropped once a write has failed.
func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil || s.why != "" {
		s.dropped += int64(len(p))
		return len(p), nil
	}
	n, err := s.f.WriteAt(p, s.size)
	s.size += int64(n)
	if err != nil {
		s.dropped += int64(len(p) - n)
		s.why = "storing the output failed after " + strconv.FormatInt(s.size, 10) + " bytes" + ": " + unwrapPath(err).Error()
	}
	return len(p), nil
}

// onWorkspaceDisk returns the bytes stored on the workspace's filesystem:
// all of them, unless the spool had to go to /tmp.
func (s *spool) onWorkspaceDisk() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inTmp {
		return 0
	}
	return s.size
}

// state returns the bytes stored and dropped, and why any were dropped.
func (s *spool) state() (size, dropped int64, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size, s.dropped, s.why
}

// close releases the file, and with it the disk space.
func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// lineOffset returns the offset of line n (0-based): the byte after the
// n-th newline, or the size when there are fewer lines.
func (s *spool) lineOffset(n int64) (int64, error) {
	s.mu.Lock()
	size, f := s.size, s.f
	s.mu.Unlock()
	if f == nil || n <= 0 {
		return 0, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	var off int64
	for seen := int64(0); seen < n; {
		chunk, err := r.ReadSlice('\n')
		off += int64(len(chunk))
		if err == nil {
			seen++
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return size, nil
		}
		return 0, err
	}
	return off, nil
}

// page reads at most limit bytes from offset as text or base64. Text
// stops before a character the limit would cut, unless that leaves
// nothing, and Next is where the page really ends.
func (s *spool) page(offset int64, limit int, asBase64 bool) (wire.JobChunk, error) {
	s.mu.Lock()
	size, f := s.size, s.f
	s.mu.Unlock()
	chunk := wire.JobChunk{Offset: offset, Next: offset, Total: size}
	if f == nil {
		return chunk, errors.New("the output is no longer kept")
	}
	if offset >= size {
		chunk.Offset, chunk.Next = size, size
		return chunk, nil
	}
	buf := make([]byte, min(int64(limit), size-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return chunk, err
	}
	buf = buf[:n]
	if asBase64 {
		chunk.Data = base64.StdEncoding.EncodeToString(buf)
	} else {
		if offset+int64(n) < size {
			if cut := trimPartialRune(buf); len(cut) > 0 {
				buf = cut
			}
		}
		chunk.Data = strings.ToValidUTF8(string(buf), "\uFFFD")
	}
	chunk.Next = offset + int64(len(buf))
	return chunk, nil
}

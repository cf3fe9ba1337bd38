//go:build containers_image_openpgp

package podman

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// maxLoggedLine bounds one line logged from a stream.
const maxLoggedLine = 1024

// lineLogger is an io.Writer that logs each complete line written to it as
// one record. It is safe for concurrent use.
type lineLogger struct {
	log   *slog.Logger
	msg   string
	attrs []any
	level slog.Level

	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		var line []byte
		switch i := bytes.IndexByte(l.buf, '\n'); {
		case i >= 0 && i <= maxLoggedLine:
			line, l.buf = l.buf[:i], l.buf[i+1:]
		case len(l.buf) >= maxLoggedLine:
			line, l.buf = l.buf[:maxLoggedLine], l.buf[maxLoggedLine:]
		default:
			return len(p), nil
		}
		if text := string(bytes.TrimRight(line, "\r")); text != "" {
			l.log.Log(context.Background(), l.level, l.msg, append(l.attrs, "line", text)...)
		}
	}
}

// writeFile replaces path with a file holding b, through a temporary file
// renamed over it, so that a concurrent reader sees the old content or the new.
func writeFile(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

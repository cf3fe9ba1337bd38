package devcontainer

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

var fixedTime = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func tarNames(t *testing.T, data []byte) string {
	t.Helper()
	var b strings.Builder
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.IsZero() && hdr.ModTime.Unix() != 0 {
			t.Errorf("%s has a time", hdr.Name)
		}
		b.WriteString(strings.TrimSuffix(hdr.Name, "/") + "\n")
	}
}

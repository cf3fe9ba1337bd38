//go:build containers_image_openpgp

package podman

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A failed pull backs off, doubling up to the cap; calls meanwhile get the
// last error and when the next pull may be; a success forgets it all.
func TestPullBackoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	p := &pullFailures{now: func() time.Time { return now }}
	const image = "registry.invalid/x:1"
	if err := p.refused(image); err != nil {
		t.Fatalf("an image never pulled is refused: %v", err)
	}
	var waits []time.Duration
	for try := 1; try <= 8; try++ {
		p.record(image, errors.New("connection refused"))
		err := p.refused(image)
		if err == nil {
			t.Fatalf("try %d: not refused right after a failure", try)
		}
		wait := p.byImage[image].next.Sub(now)
		waits = append(waits, wait)
		for _, want := range []string{"connection refused", "not tried again before", "pull or build the image yourself"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("try %d: %q lacks %q", try, err, want)
			}
		}
		now = now.Add(wait - time.Second)
		if p.refused(image) == nil {
			t.Fatalf("try %d: allowed a second before its back-off of %s ends", try, wait)
		}
		now = now.Add(time.Second)
		if err := p.refused(image); err != nil {
			t.Fatalf("try %d: still refused when its back-off of %s ended: %v", try, wait, err)
		}
	}
	want := []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("back-offs %v, want %v", waits, want)
		}
	}
	if err := p.refused("other:1"); err != nil {
		t.Errorf("another image is refused: %v", err)
	}
	p.record(image, errors.New("refused again"))
	p.record(image, nil)
	if err := p.refused(image); err != nil {
		t.Errorf("refused after a pull that worked: %v", err)
	}
	p.record(image, errors.New("fails anew"))
	if got := p.byImage[image].next.Sub(now); got != pullBackoffFirst {
		t.Errorf("after a success the first back-off is %s, want %s", got, pullBackoffFirst)
	}
}

//go:build containers_image_openpgp

package podman

import (
	"fmt"
	"sync"
	"time"
)

// A pull that failed (no registry within reach, a name that does not
// exist, a refused login) fails the same way a second later, after the
// same wait: Podman itself tries three times. So a failure is remembered
// per image, and until its back-off passes every call that needs the
// image is answered at once with the last error and when the pull will be
// tried again. The image itself is still looked for on every call, so one
// pulled or built by hand is used at once.
const (
	// pullBackoffFirst is the wait after the first failure; each further
	// failure doubles it, up to pullBackoffMax.
	pullBackoffFirst = 15 * time.Second
	pullBackoffMax   = 10 * time.Minute
)

// pullFailures remembers, per image, the pulls that failed. The zero
// value is ready; it is safe for concurrent use.
type pullFailures struct {
	mu      sync.Mutex
	now     func() time.Time // time.Now when nil (tests set a clock)
	byImage map[string]*pullFailure
}

// pullFailure is an image's run of failed pulls.
type pullFailure struct {
	err        error
	tries      int
	last, next time.Time
}

func (p *pullFailures) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// refused returns the error to answer while image's back-off lasts, or
// nil when a pull may be tried.
func (p *pullFailures) refused(image string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.byImage[image]
	now := p.clock()
	if f == nil || !now.Before(f.next) {
		return nil
	}
	return fmt.Errorf("%w (the pull failed %s, the last %s ago; it is not tried again before %s, in %s, so that calls do not each wait for it: "+
		"pull or build the image yourself and the next call uses it at once)",
		f.err, times(f.tries), now.Sub(f.last).Round(time.Second), f.next.UTC().Format("15:04:05 UTC"), f.next.Sub(now).Round(time.Second))
}

// record notes how a pull of image ended: an error starts or extends its
// back-off, nil forgets its failures.
func (p *pullFailures) record(image string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		delete(p.byImage, image)
		return
	}
	if p.byImage == nil {
		p.byImage = map[string]*pullFailure{}
	}
	f := p.byImage[image]
	if f == nil {
		f = &pullFailure{}
		p.byImage[image] = f
	}
	f.err, f.last = err, p.clock()
	f.tries++
	f.next = f.last.Add(pullBackoff(f.tries))
}

// pullBackoff is the wait after the tries-th failure in a row.
func pullBackoff(tries int) time.Duration {
	d := pullBackoffFirst
	for i := 1; i < tries && d < pullBackoffMax; i++ {
		d *= 2
	}
	return min(d, pullBackoffMax)
}

// times says "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

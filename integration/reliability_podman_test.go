package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReliabilityPodman tries, through the real binary and Podman, the
// promises about how the server uses Podman and this machine: an image
// that cannot be pulled.
func TestReliabilityPodman(t *testing.T) {
	t.Run("a pull that fails", func(t *testing.T) {
		image := "localhost/wink-no-such-image-" + randomHex(4) + ":1"
		p := start(t, startOptions{image: image})
		pulls := func() int {
			n := 0
			for _, rec := range p.logs.records() {
				if rec["msg"] == "pulling image" && rec["image"] == image {
					n++
				}
			}
			return n
		}
		const calls = 12
		backedOff, broken := 0, 0
		var first string
		for i := range calls {
			res := p.call("podman_shell", map[string]any{"command": []string{"true"}})
			text := textOf(res)
			switch {
			case !res.IsError || !strings.Contains(text, image) || !strings.Contains(text, "connection refused"):
				broken++
				t.Errorf("call %d: %q; want the pull's own error", i, text)
			case strings.Contains(text, "not tried again before"):
				backedOff++
			case first == "":
				first = text
			}
		}
		if n := pulls(); n != 1 {
			broken += n - 1
			t.Errorf("%d calls pulled %d times; want one pull, then the back-off", calls, n)
		}
		if backedOff < calls-1 {
			t.Errorf("%d of %d calls answered with the back-off; want all but the first (first: %q)", backedOff, calls, first)
		}
		// The back-off ends: a call then pulls again.
		retried := pulls()
		waitUntil(t, 2*time.Minute, "a pull after the first back-off", func() bool {
			p.call("podman_shell", map[string]any{"command": []string{"true"}})
			retried = pulls()
			if retried < 2 {
				time.Sleep(500 * time.Millisecond)
			}
			return retried >= 2
		})
		// An image made by hand is used at the next call, back-off or not.
		if out, err := podman(t, "tag", testImage, image); err != nil {
			t.Fatalf("podman tag: %v: %s", err, out)
		}
		t.Cleanup(func() { _, _ = podman(t, "untag", testImage, image) })
		res := p.call("podman_shell", map[string]any{"command": []string{"echo", "made"}})
		if res.IsError || !strings.Contains(textOf(res), "made") {
			broken++
			t.Errorf("with the image tagged by hand, the next call: %q", textOf(res))
		}
		recordPromise(promiseFigure{Class: "a failing pull: calls in a row naming an image no registry has, then the image made by hand",
			Tried: calls + 1, Broken: broken,
			Measured: fmt.Sprintf("%d calls, 1 pull; %d answered at once with the pull's last error and when it is tried again; the next pull after the back-off (15 s), %d pulls in all; the image tagged by hand used at the next call",
				calls, backedOff, retried)})
	})
}

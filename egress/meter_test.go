package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A meter given to proxies counts what each carries: a second proxy on a
// used-up meter refuses at once, and a proxy moved to a fresh meter
// (SetMeter) counts there from then on.
func TestMeterOutlivesItsProxies(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }))
	defer upstream.Close()
	policy, err := ParsePolicy([]string{upstream.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(m *Meter) (*Session, *http.Client) {
		s := NewSession(Config{Policy: policy, Meter: m}, "test")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(ln)
		t.Cleanup(func() { ln.Close() })
		return s, clientVia("http://"+ln.Addr().String(), nil)
	}
	shared := NewMeter(100<<10, 0)
	first, c1 := serve(shared)
	for range 2 {
		if resp, err := c1.Get(upstream.URL); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	if first.Transferred() < 100<<10 {
		t.Fatalf("the first proxy counted %d bytes", first.Transferred())
	}
	second, c2 := serve(shared)
	if code, b := get(t, c2, upstream.URL); code != 403 || !strings.Contains(b, "--egress-max-bytes") {
		t.Fatalf("a new proxy on a used-up meter: %d %q", code, b)
	}
	fresh := NewMeter(1<<20, 0)
	second.SetMeter(fresh)
	if code, _ := get(t, c2, upstream.URL); code != 200 || fresh.Used() < 64<<10 {
		t.Fatalf("after SetMeter: %d, the new meter counted %d", code, fresh.Used())
	}
}

func TestMeterRaiseTo(t *testing.T) {
	m := NewMeter(0, -5)
	if m.Used() != 0 || m.Max() != DefaultMaxBytes {
		t.Fatalf("NewMeter(0, -5) = used %d, max %d", m.Used(), m.Max())
	}
	m.RaiseTo(10)
	m.RaiseTo(3)
	if m.Used() != 10 {
		t.Fatalf("after RaiseTo(10), RaiseTo(3): %d", m.Used())
	}
}

// A meter's listeners hear of each 1/16 of its cap crossed, of a raise and
// of a connection's end, and nothing once they stop.
func TestMeterTellsItsListeners(t *testing.T) {
	m := NewMeter(1600, 0) // a step of 100 bytes
	calls := 0
	stop := m.Listen(func() { calls++ })
	for _, tc := range []struct {
		what string
		do   func()
		want int
	}{
		{"50 bytes, within the first step", func() { m.add(50) }, 0},
		{"60 more, crossing 100", func() { m.add(60) }, 1},
		{"350 more, crossing 200 to 400 at once", func() { m.add(350) }, 2},
		{"a raise", func() { m.RaiseTo(1000) }, 3},
		{"a raise below the count", func() { m.RaiseTo(10) }, 3},
		{"a connection's end", func() { m.ended() }, 4},
	} {
		tc.do()
		if calls != tc.want {
			t.Errorf("after %s: %d calls, want %d", tc.what, calls, tc.want)
		}
	}
	stop()
	m.add(500)
	if calls != 4 {
		t.Errorf("a stopped listener was called: %d calls", calls)
	}
}

// A meter that also counts in a total adds what it carries there, but not
// what it is raised by (carried before, elsewhere).
func TestMeterAlsoCountsInATotal(t *testing.T) {
	var total atomic.Int64
	a := NewMeter(1<<20, 0).AlsoCountIn(&total)
	b := NewMeter(1<<20, 0).AlsoCountIn(&total)
	a.add(100)
	b.add(23)
	a.RaiseTo(5000)
	if total.Load() != 123 || a.Used() != 5000 {
		t.Fatalf("total %d, a %d; want 123 and 5000", total.Load(), a.Used())
	}
}

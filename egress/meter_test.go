package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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

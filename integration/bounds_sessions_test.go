package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// openedSession is a session opened by hand, over streamable HTTP or SSE, as
// a crowd of clients would: no client library, nothing in between.
type openedSession struct {
	t         *testing.T
	transport string
	base      string // scheme://host:port
	id        string
	stream    *http.Response // sse: the open event stream, which is the session
	status    int            // the answer to the request that opened it
	body      string         // the answer's start, when it was refused
}

// openRaw opens a session on the server at url (its /mcp or /sse) and
// returns it with the status it got; only a 200 opened one.
func openRaw(t *testing.T, transport, url string) *openedSession {
	r := &openedSession{t: t, transport: transport, base: strings.TrimSuffix(strings.TrimSuffix(url, "/mcp"), "/sse")}
	method, body := http.MethodPost, initializeBody
	if transport == "sse" {
		method, body = http.MethodGet, ""
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("opening a session: %v", err)
		return r
	}
	r.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		r.body = string(b)
		return r
	}
	if transport == "http" {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.id = resp.Header.Get("Mcp-Session-Id")
		return r
	}
	r.stream = resp
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if _, q, ok := strings.Cut(sc.Text(), "sessionId="); ok && strings.HasPrefix(sc.Text(), "data: ") {
			r.id = q
			break
		}
	}
	go io.Copy(io.Discard, resp.Body) // the answers come on the stream
	return r
}

// confirm initializes (sse) and confirms the session, which makes its
// container ahead of its first call.
func (r *openedSession) confirm() {
	if r.transport == "http" {
		post(r.t, r.base+"/mcp", map[string]string{"Mcp-Session-Id": r.id, "Mcp-Protocol-Version": "2025-06-18"}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return
	}
	url := r.base + "/message?sessionId=" + r.id
	post(r.t, url, nil, initializeBody)
	post(r.t, url, nil, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// end ends the session as its client would: DELETE, or closing the stream.
func (r *openedSession) end() {
	if r.transport == "http" {
		resp := rawRequest(r.t, http.MethodDelete, r.base+"/mcp", map[string]string{"Mcp-Session-Id": r.id, "Mcp-Protocol-Version": "2025-06-18"}, "")
		resp.Body.Close()
		return
	}
	r.stream.Body.Close()
}

// openCrowd opens n sessions at once. Over streamable HTTP each client
// sends its initialize's headers with "Expect: 100-continue" (as curl
// does for a body past 1 KiB), and sends the body only once every one has
// its answer: a 100 says the server let the request past its session cap,
// so a cap checked at the headers and counted at the body lets them all in.
// between, if not nil, runs after the answers and before the bodies.
func openCrowd(t *testing.T, transport, url string, n int, between func()) []*openedSession {
	out := make([]*openedSession, n)
	var wg sync.WaitGroup
	ready, bodies := make(chan struct{}), make(chan struct{})
	var answered sync.WaitGroup
	answered.Add(n)
	for i := range n {
		wg.Go(func() {
			<-ready
			if transport == "sse" {
				answered.Done()
				out[i] = openRaw(t, transport, url)
				return
			}
			out[i] = openWhenAnswered(t, url, &answered, bodies)
		})
	}
	close(ready)
	answered.Wait()
	if between != nil {
		between()
	}
	close(bodies)
	wg.Wait()
	return out
}

// openWhenAnswered sends an initialize's headers asking to continue,
// marks answered once the server answers them, and sends the body, if it
// was asked for, once bodies is closed.
func openWhenAnswered(t *testing.T, url string, answered *sync.WaitGroup, bodies <-chan struct{}) *openedSession {
	r := &openedSession{t: t, transport: "http", base: strings.TrimSuffix(url, "/mcp")}
	host := strings.TrimPrefix(r.base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		answered.Done()
		t.Errorf("dialling %s: %v", host, err)
		return r
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", host, len(initializeBody))
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	answered.Done()
	<-bodies
	if err != nil {
		t.Errorf("reading the answer to an initialize's headers: %v", err)
		return r
	}
	if resp.StatusCode == http.StatusContinue {
		io.WriteString(conn, initializeBody)
		if resp, err = http.ReadResponse(rd, nil); err != nil {
			t.Errorf("reading the answer to an initialize: %v", err)
			return r
		}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	r.status, r.body, r.id = resp.StatusCode, string(b), resp.Header.Get("Mcp-Session-Id")
	return r
}

// crowdStaysUnderTheCap: 3N initializes (or SSE streams) at once against
// --max-sessions N open exactly N sessions, which make N containers; the
// rest get a 503 that names the cap and what to do; once the N end, N new
// ones fit again and one more does not.
func crowdStaysUnderTheCap(transport string) func(t *testing.T) {
	return func(t *testing.T) {
		const limit, crowd = 4, 12
		p := launch(t, startOptions{transport: transport, args: []string{"--max-sessions", fmt.Sprint(limit), "--warm", "0"}})
		broken := 0
		opened := openCrowd(t, transport, p.url, crowd, nil)
		var won []*openedSession
		unclear := 0
		for _, r := range opened {
			switch {
			case r.status == http.StatusOK && r.id != "":
				won = append(won, r)
			case r.status == http.StatusServiceUnavailable && strings.Contains(r.body, "at most 4") && strings.Contains(r.body, "--max-sessions"):
			default:
				unclear++
				t.Errorf("a session of the crowd got %d %q, want 200 with a session or 503 naming the cap", r.status, r.body)
			}
		}
		if len(won) != limit {
			t.Errorf("%d of %d sessions opened at once against --max-sessions %d were let in", len(won), crowd, limit)
			broken++
		}
		for _, r := range won {
			r.confirm()
		}
		waitUntil(t, 3*time.Minute, "each session let in to have its container", func() bool { return len(containersNamed(t, p.prefix)) >= len(won) })
		containers := len(containersNamed(t, p.prefix))
		if containers > limit {
			t.Errorf("%d containers run, past --max-sessions %d", containers, limit)
			broken++
		}
		for _, r := range won {
			r.end()
		}
		waitUntil(t, 2*time.Minute, "the sessions' containers to go", func() bool { return len(containersNamed(t, p.prefix)) == 0 })
		again := openCrowd(t, transport, p.url, limit, nil)
		fit := 0
		for _, r := range again {
			if r.status == http.StatusOK {
				fit++
			}
		}
		extra := openRaw(t, transport, p.url)
		if fit != limit || extra.status != http.StatusServiceUnavailable {
			t.Errorf("after the crowd's sessions ended, %d of %d new sessions fitted and one more got %d: a slot leaked", fit, limit, extra.status)
			broken++
		}
		for _, r := range append(again, extra) {
			if r.status == http.StatusOK {
				r.end()
			}
		}
		recordBound(t, promiseFigure{Class: fmt.Sprintf("sessions: %d clients open a session at the same moment against --max-sessions %d (%s)", crowd, limit, strings.ToUpper(transport)),
			Tried: crowd + limit + 1, Broken: broken + unclear,
			Measured: fmt.Sprintf("%d let in, %d refused with 503 naming --max-sessions, %d answered otherwise; %d containers ran; after they ended %d of %d new sessions fitted and one more got %d",
				len(won), crowd-len(won)-unclear, unclear, containers, fit, limit, extra.status)})
	}
}

// handoffRacesTheCrowd: with one --max-sessions slot left, a crowd of
// initializes and a session's handoff (whose workspace then holds a slot)
// race for it, the handoff coming between the initializes' headers and
// their bodies: exactly one of them gets it.
func handoffRacesTheCrowd(t *testing.T) {
	const limit, crowd = 3, 6
	p := start(t, startOptions{transport: "http", args: []string{"--max-sessions", fmt.Sprint(limit), "--warm", "0"}})
	other := openRaw(t, "http", p.url)
	if other.status != http.StatusOK {
		t.Fatalf("a second session within the cap: %d %s", other.status, other.body)
	}
	defer other.end()
	var handedOver bool
	var handoffText string
	opened := openCrowd(t, "http", p.url, crowd, func() {
		res := p.call("workspace_handoff", map[string]any{"expires_in_seconds": 600})
		handedOver, handoffText = !res.IsError, textOf(res)
	})
	won := 0
	for _, r := range opened {
		if r.status == http.StatusOK {
			won++
			defer r.end()
		}
	}
	if handedOver {
		won++
	} else if !strings.Contains(handoffText, "--max-sessions") {
		t.Errorf("a refused handoff does not name the cap: %s", handoffText)
	}
	broken := 0
	if won != 1 {
		t.Errorf("%d of a handoff and %d initializes took the one slot left", won, crowd)
		broken++
	}
	recordBound(t, promiseFigure{Class: fmt.Sprintf("sessions: a handoff and %d initializes race for the last --max-sessions slot (HTTP)", crowd),
		Tried: crowd + 1, Broken: broken,
		Measured: fmt.Sprintf("%d took it (%s); the others were refused naming --max-sessions", won, map[bool]string{true: "the handoff", false: "an initialize"}[handedOver])})
}

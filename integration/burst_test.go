package integration

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// burstSize is how many sessions TestABurstOfSessionsAllStart opens at once.
const burstSize = 30

// TestABurstOfSessionsAllStart opens 30 sessions over streamable HTTP at
// once, with no warm pool and a Podman API deadline of 5 s, and runs a
// command in each: every one must succeed. Made all at once, each of the
// Podman service's calls waits behind the others' and some pass 5 s (the
// build before the creation queue failed here); behind the queue each call
// runs beside only --create-parallelism others, and the sessions that wait
// for their turn are told how many creations are ahead of them. Nothing
// may be left behind once they end.
//
// WINK_TEST_BURST_PARALLELISM, if set, is passed as --create-parallelism
// through the environment (a build without the flag ignores it).
func TestABurstOfSessionsAllStart(t *testing.T) {
	p := launch(t, startOptions{transport: "http", args: []string{"--warm", "0", "--podman-timeout", "5s", "--max-sessions", fmt.Sprint(burstSize + 2)},
		env: []string{"WINK_CREATE_PARALLELISM=" + envOr("WINK_TEST_BURST_PARALLELISM", "4")}})
	var (
		wg             sync.WaitGroup
		failed, waited atomic.Int32
		clients        = make([]*client.Client, burstSize)
		start          = make(chan struct{})
	)
	for i := range burstSize {
		wg.Go(func() {
			<-start
			c, ok := burstSession(t, p.url, i, &waited)
			clients[i] = c
			if !ok {
				failed.Add(1)
			}
		})
	}
	begun := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d sessions opened at once, each ran a command, in %s; %d were told they waited for a turn", burstSize, time.Since(begun).Round(time.Millisecond), waited.Load())
	t.Logf("creation steps, median (max) over the burst: %s", stepMedians(p.logs.String()))
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d sessions opened at once failed their first command", n, burstSize)
	}
	if strings.Contains(p.logs.String(), "did not answer within") {
		t.Errorf("a Podman call passed --podman-timeout during the burst:\n%s", lastLines(p.logs.String(), "did not answer within", 3))
	}
	if waited.Load() == 0 && failed.Load() == 0 {
		t.Errorf("none of %d sessions made 4 at a time was told it waited for a turn", burstSize)
	}
	for _, c := range clients {
		if c != nil {
			c.Close() // ends the session (DELETE)
		}
	}
	waitUntil(t, 2*time.Minute, "the burst's containers to be removed", func() bool { return len(containersNamed(t, p.prefix)) == 0 })
	waitUntil(t, time.Minute, "the burst's session directories to be removed", func() bool { return len(sessionDirs(t, p.cache)) == 0 })
}

// burstSession opens a session on url, runs echo in it with a progress
// token, and counts it in waited if a progress report said it waited for
// its turn to make a container.
func burstSession(t *testing.T, url string, i int, waited *atomic.Int32) (*client.Client, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Errorf("session %d: %v", i, err)
		return nil, false
	}
	c := client.NewClient(tr)
	var told atomic.Bool
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		msg, _ := n.Params.AdditionalFields["message"].(string)
		if n.Method == "notifications/progress" && strings.Contains(msg, "creations ahead of this one") {
			told.Store(true)
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Errorf("session %d: starting the client: %v", i, err)
		return c, false
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "wink-burst", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Errorf("session %d: initialize: %v", i, err)
		return c, false
	}
	req := shellRequest("echo", fmt.Sprintf("session %d", i))
	req.Params.Meta = &mcp.Meta{ProgressToken: fmt.Sprintf("burst-%d", i)}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Errorf("session %d: its first command: %v %s", i, err, resultText(res))
		return c, false
	}
	var out tools.ShellResult
	decodeStructured(t, res, &out)
	if out.ExitCode != 0 || out.Stdout != fmt.Sprintf("session %d\n", i) {
		t.Errorf("session %d: its first command exited %d with %q", i, out.ExitCode, out.Stdout)
		return c, false
	}
	if told.Load() {
		waited.Add(1)
	}
	return c, true
}

// resultText is a result's text, or "" for none.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	return textOf(res)
}

// lastLines returns up to n lines of logs that contain s.
func lastLines(logs, s string, n int) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// stepPattern is one step of a "workspace ready" record's steps.
var stepPattern = regexp.MustCompile(`(\w+)=(\d+)ms`)

// stepMedians sums up the steps of the "workspace ready" records in logs:
// each step's median and largest time, in the order they ran.
func stepMedians(logs string) string {
	var order []string
	times := map[string][]int{}
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, `"msg":"workspace ready"`) {
			continue
		}
		_, steps, _ := strings.Cut(l, `"steps":"`)
		steps, _, _ = strings.Cut(steps, `"`)
		for _, m := range stepPattern.FindAllStringSubmatch(steps, -1) {
			if _, seen := times[m[1]]; !seen {
				order = append(order, m[1])
			}
			n, _ := strconv.Atoi(m[2])
			times[m[1]] = append(times[m[1]], n)
		}
	}
	var out []string
	for _, step := range order {
		v := times[step]
		slices.Sort(v)
		out = append(out, fmt.Sprintf("%s=%dms (%dms)", step, v[len(v)/2], v[len(v)-1]))
	}
	return strings.Join(out, " ")
}

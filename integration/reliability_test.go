package integration

import (
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/machine"
)

// The reliability suite (the TestReliability* tests) proves the sandbox
// holds against bad input, escapes, abuse, faults and load. Each test adds
// its figures here; with WINK_RELIABILITY_OUT set, TestMain writes them as
// JSON, from which the figures of docs/reliability.md are generated.
// WINK_SOAK sets how long the load test runs (CI keeps it short).

// figures is what the suite measured.
type figures struct {
	mu           sync.Mutex
	Machine      map[string]string `json:"machine"`
	BadInput     badInputFigures   `json:"bad_input"`
	Escapes      escapeFigures     `json:"escapes"`
	Abuse        []abuseFigure     `json:"abuse"`
	Faults       []faultFigure     `json:"faults"`
	Orphans      *int              `json:"orphans_after_kill9,omitempty"`
	HostileImage *imageFigures     `json:"hostile_image,omitempty"`
	Load         *loadFigures      `json:"load,omitempty"`
	Promises     []promiseFigure   `json:"promises,omitempty"`
	// PromisesMeasured dates the promises, which a run of that test alone
	// may add to an older file.
	PromisesMeasured string `json:"promises_measured,omitempty"`
	Generated        string `json:"generated"`
}

type badInputFigures struct {
	Tried   int `json:"tried"`
	Crashes int `json:"crashes"` // the server stopped answering or exited
	Unclear int `json:"unclear"` // answered, but not with an error naming the field
	Changed int `json:"changed"` // the workspace changed
}

type escapeFigures struct {
	Tried       int `json:"tried"`
	Leaks       int `json:"leaks"`        // a canary token came back through a file tool
	HostChanges int `json:"host_changes"` // a host or in-container canary changed
}

type abuseFigure struct {
	Case          string  `json:"case"`
	Contained     string  `json:"contained"` // how the limit showed
	CallMillis    int64   `json:"call_ms"`
	RecoveryMs    int64   `json:"recovery_ms"` // from the call's end until `echo ok` answered
	NeighbourP99  float64 `json:"neighbour_p99_ms"`
	BaselineP99   float64 `json:"baseline_p99_ms"`
	NeighbourMax  float64 `json:"neighbour_max_ms"`
	NeighbourSeen int     `json:"neighbour_samples"`
}

type imageFigures struct {
	Checks int `json:"checks"`
	Failed int `json:"failed"`
}

type faultFigure struct {
	Fault      string `json:"fault"`
	Survived   bool   `json:"survived"` // the next call worked
	FilesLost  int    `json:"files_lost"`
	InFlight   string `json:"in_flight,omitempty"` // what the interrupted call said
	RecoveryMs int64  `json:"recovery_ms"`
}

type loadFigures struct {
	Sessions  int                     `json:"sessions"`
	Seconds   float64                 `json:"seconds"`
	Calls     int                     `json:"calls"`
	Errors    int                     `json:"errors"`
	Tools     map[string]latencyStats `json:"tools"`      // every call but each session's first
	FirstCall latencyStats            `json:"first_call"` // each session's first call, which creates its container
	Before    resourceSample          `json:"before"`
	After     resourceSample          `json:"after"`
	MaxExecID int                     `json:"max_exec_sessions_per_container"`
	Zombies   int                     `json:"zombies_left"` // processes started during the load, unreaped after it
}

type latencyStats struct {
	Calls int     `json:"calls"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
}

type resourceSample struct {
	Goroutines int `json:"goroutines"`
	FDs        int `json:"fds"`
	HeapKiB    int `json:"live_heap_kib"` // after a collection
	RSSKiB     int `json:"rss_kib"`
	Conmons    int `json:"conmons"` // live ones
	Containers int `json:"containers"`
}

var suite = &figures{}

func (f *figures) record(fn func(f *figures)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// writeFigures saves the suite's figures where WINK_RELIABILITY_OUT says.
func writeFigures() error {
	out := os.Getenv("WINK_RELIABILITY_OUT")
	if out == "" {
		return nil
	}
	suite.mu.Lock()
	defer suite.mu.Unlock()
	suite.Machine = machine.Describe()
	suite.Generated = time.Now().UTC().Format("2006-01-02")
	b, err := json.MarshalIndent(suite, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// percentile returns the p-th percentile (0-100) of samples in milliseconds.
func percentile(samples []time.Duration, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return float64(s[i].Microseconds()) / 1000
}

// soak is how long the load test runs: WINK_SOAK, else 30 s.
func soak() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("WINK_SOAK")); err == nil && d > 0 {
		return d
	}
	return 30 * time.Second
}

// neighbourCalls has a second session of p's server call echo in a loop
// until the returned function is called, which reports its calls' times
// and failures.
func neighbourCalls(t *testing.T, p *proc) func() ([]time.Duration, int) {
	t.Helper()
	neighbour := *p
	neighbour.client = nil
	neighbour.connect(nil)
	neighbour.run("true")
	stop := make(chan struct{})
	var times []time.Duration
	failed := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			begin := time.Now()
			if res := neighbour.call("podman_shell", map[string]any{"command": []string{"echo", "ok"}}); res.IsError {
				failed++
				continue
			}
			times = append(times, time.Since(begin))
		}
	})
	return func() ([]time.Duration, int) {
		close(stop)
		wg.Wait()
		return times, failed
	}
}

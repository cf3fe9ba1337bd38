package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/machine"
)

// warmup calls run before a measurement and are not counted.
const warmup = 10

// measurement is one row of the report.
type measurement struct {
	Name    string  `json:"name"`
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
	Mean    float64 `json:"mean_ms"`
	Errors  int     `json:"errors"`
	Target  string  `json:"target,omitempty"`
	Met     bool    `json:"met,omitempty"`
	// CallsPerSecond is the throughput of a closed-loop measurement.
	CallsPerSecond float64 `json:"calls_per_second,omitempty"`
}

// report is everything wink-bench prints and writes.
type report struct {
	Machine      map[string]string `json:"machine"`
	Command      string            `json:"command"`
	Measurements []measurement     `json:"measurements"`
	ReadSpeedup  float64           `json:"read_file_speedup_over_exec"`
	// ClosedLoopCallsPerSecond is what the concurrent sessions, each
	// calling as soon as its last call answered, got through: saturation.
	ClosedLoopCallsPerSecond float64 `json:"closed_loop_calls_per_second,omitempty"`
	SpeedupMet               bool    `json:"speedup_target_met"`
	// KubernetesReadSpeedup is the Kubernetes exec baseline's p50 over
	// the Kubernetes read_file's.
	KubernetesReadSpeedup float64 `json:"kubernetes_read_file_speedup_over_exec,omitempty"`
	// EgressShare is the egress download's speed as a share of the direct one.
	EgressShare    float64 `json:"egress_share_of_direct,omitempty"`
	EgressShareMet bool    `json:"egress_share_target_met,omitempty"`
	// Checkpoints is what the checkpoints of the measurement stored.
	Checkpoints *checkpointFigures `json:"checkpoints,omitempty"`
}

// measure runs fn warmup+n times and summarises the last n.
func measure(name string, n int, fn func(i int) error) measurement {
	return measureSetup(name, n, nil, fn, nil)
}

// measureSetup is measure with untimed work before and after each sample.
// Every error counts, warm-up ones included.
func measureSetup(name string, n int, before func() error, fn func(i int) error, after func()) measurement {
	var durations []time.Duration
	errors := 0
	fail := func(err error) {
		errors++
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	}
	for i := range warmup + n {
		if before != nil {
			if err := before(); err != nil {
				fail(err)
				continue
			}
		}
		start := time.Now()
		err := fn(i)
		d := time.Since(start)
		if after != nil {
			after()
		}
		switch {
		case err != nil:
			fail(err)
		case i >= warmup:
			durations = append(durations, d)
		}
	}
	m := summarize(name, durations)
	m.Errors = errors
	return m
}

// summarize computes the percentiles of durations, in milliseconds.
func summarize(name string, durations []time.Duration) measurement {
	m := measurement{Name: name, Samples: len(durations)}
	if len(durations) == 0 {
		return m
	}
	slices.Sort(durations)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var total time.Duration
	for _, d := range durations {
		total += d
	}
	m.P50 = ms(durations[len(durations)/2])
	m.P90 = ms(durations[min(len(durations)-1, len(durations)*90/100)])
	m.P99 = ms(durations[min(len(durations)-1, len(durations)*99/100)])
	m.Mean = ms(total / time.Duration(len(durations)))
	return m
}

// markdown renders the report as the Speed table of docs/speed.md.
func (r report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s, %s CPUs, %s; kernel %s; Podman %s", r.Machine["cpu"], r.Machine["cpus"], r.Machine["memory"], r.Machine["kernel"], r.Machine["podman"])
	if v := r.Machine["kubernetes"]; v != "" {
		fmt.Fprintf(&b, "; Kubernetes %s (the test node of `make cluster`, on the same machine)", v)
	}
	fmt.Fprintf(&b, "; %s; measured %s", r.Machine["go"], r.Machine["date"])
	if l := r.Machine["load"]; l != "" {
		fmt.Fprintf(&b, ", load average %s at the start", l)
	}
	b.WriteString(".\n\n")
	fmt.Fprintln(&b, "| measurement | samples | p50 | p90 | p99 | errors | target |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, m := range r.Measurements {
		verdict := ""
		if m.Target != "" {
			verdict = m.Target + map[bool]string{true: " (met)", false: " (missed)"}[m.Met]
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f ms | %.2f ms | %.2f ms | %d | %s |\n", m.Name, m.Samples, m.P50, m.P90, m.P99, m.Errors, verdict)
	}
	b.WriteString("\n")
	if r.ReadSpeedup > 0 {
		fmt.Fprintf(&b, "read_file is %.0f times faster than one podman exec per read, at p50 (target: at least 50 times, %s).\n",
			r.ReadSpeedup, map[bool]string{true: "met", false: "missed"}[r.SpeedupMet])
	}
	if r.KubernetesReadSpeedup > 0 {
		fmt.Fprintf(&b, "On Kubernetes, read_file is %.0f times faster than one new exec per read through client-go, at p50.\n", r.KubernetesReadSpeedup)
	}
	if r.EgressShare > 0 {
		fmt.Fprintf(&b, "A download through the egress proxy runs at %.0f%% of the same download made directly on this machine, each timed by the same client, at p50 (target: at least 80%%, %s).\n",
			100*r.EgressShare, map[bool]string{true: "met", false: "missed"}[r.EgressShareMet])
	}
	if c := r.Checkpoints; c != nil && len(c.LaterAddedBytes) > 0 {
		var sum, most int64
		for _, n := range c.LaterAddedBytes {
			sum, most = sum+n, max(most, n)
		}
		fmt.Fprintf(&b, "The first checkpoint of the 10,000 files stored %.1f MB; the 2nd-10th, each after 50 files (500 KiB) changed, added %.0f KiB each on average, %.0f KiB at most; the store held %.1f MB after ten.\n",
			float64(c.FirstAddedBytes)/1e6, float64(sum)/float64(len(c.LaterAddedBytes))/1024, float64(most)/1024, float64(c.StoreBytes)/1e6)
	}
	if r.ClosedLoopCallsPerSecond > 0 {
		fmt.Fprintf(&b, "The concurrent sessions, each calling again as soon as it has an answer, got through %.0f calls a second (saturation).\n",
			r.ClosedLoopCallsPerSecond)
	}
	return b.String()
}

// setKubernetesSpeedup records how much faster read_file is on Kubernetes
// than one new exec per read.
func (r *report) setKubernetesSpeedup(k kubernetesRows) {
	if k.reads.P50 > 0 && k.execBaseline.Errors == 0 {
		r.KubernetesReadSpeedup = k.execBaseline.P50 / k.reads.P50
	}
}

// describeMachine records what the numbers were measured on.
func describeMachine(cfg config) map[string]string {
	m := machine.Describe()
	m["date"] = time.Now().UTC().Format("2006-01-02")
	m["image"] = cfg.image
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m["load"] = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return m
}

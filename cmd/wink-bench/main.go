// Command wink-bench measures wink-mcp end to end. It drives the built
// binary over stdio with a minimal JSON-RPC client (and, for comparison,
// mcp-go's) against the real Podman service,
// prints p50 and p99 of each measurement with its target, and writes the
// same numbers as JSON. The baseline, one `podman exec` of cat per read
// through the bindings, runs in the same process against the same container,
// so the ratio holds however loaded the machine is.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

type config struct {
	bin, image, socket, out string
	samples, coldSamples    int
	sessions, sessionOps    int
	httpSamples, burst      int
	egressSamples           int
	serviceSamples          int
	only                    string
	baselineBin             string // another build, measured beside bin where a measurement offers it
	// The Kubernetes rows' cluster: its kubeconfig, the namespace of the
	// measured Pods, the node's containerd (the agent image is imported
	// there), and how many unpooled first calls are timed.
	kubeconfig, namespace, clusterContainerd string
	kubernetesColdSamples                    int
	// kubernetes, when set, is the cluster a measured wink-mcp runs on
	// (--engine kubernetes) instead of the Podman service.
	kubernetes *kubernetesCluster
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "bin/wink-mcp", "the wink-mcp binary to measure")
	flag.StringVar(&cfg.image, "image", "localhost/wink-workspace:bookworm", "workspace image (must be present)")
	flag.StringVar(&cfg.socket, "socket", "/run/podman/podman.sock", "Podman service socket")
	flag.StringVar(&cfg.out, "out", "bench-results.json", "where to write the results as JSON")
	flag.IntVar(&cfg.samples, "samples", 300, "calls per latency measurement")
	flag.IntVar(&cfg.coldSamples, "cold-samples", 40, "new processes for each first-call measurement")
	flag.IntVar(&cfg.httpSamples, "http-samples", 30, "new sessions for each HTTP first-call measurement")
	flag.IntVar(&cfg.burst, "burst", 50, "sessions opened at once in the burst measurements")
	flag.IntVar(&cfg.sessions, "sessions", 20, "concurrent sessions in the load measurement")
	flag.IntVar(&cfg.sessionOps, "session-ops", 100, "calls per concurrent session")
	flag.IntVar(&cfg.egressSamples, "egress-samples", 5, "downloads through the egress proxy, and directly")
	flag.IntVar(&cfg.serviceSamples, "service-samples", 10, "services started and stopped (workspace_service)")
	flag.StringVar(&cfg.baselineBin, "baseline-bin", "", "another wink-mcp binary (an older build) whose initialize rows are measured beside -bin's, as baselines")
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "/var/lib/wink-mcp/cluster/admin.kubeconfig", "kubeconfig of the cluster the Kubernetes rows are measured on (make cluster's test node)")
	flag.StringVar(&cfg.namespace, "namespace", "wink-bench", "namespace of the Kubernetes rows' Pods, made if missing")
	flag.StringVar(&cfg.clusterContainerd, "cluster-containerd", "/run/wink-mcp/cluster/containerd/containerd.sock", "the test node's containerd socket, into which the agent image is imported")
	flag.IntVar(&cfg.kubernetesColdSamples, "kubernetes-cold-samples", 10, "new sessions timed for the Kubernetes first call without a pool (each makes a Pod)")
	flag.StringVar(&cfg.only, "only", "", "run only this measurement ("+strings.Join(onlyNames(), ", ")+"), print it and write it to -out")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "wink-bench: %v\n", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	ctx := context.Background()
	rep := report{Machine: describeMachine(cfg), Command: strings.Join(append([]string{"wink-bench"}, os.Args[1:]...), " ")}
	if cfg.only != "" {
		measureOnly, ok := onlyMeasurements[cfg.only]
		if !ok {
			return fmt.Errorf("-only %q: not a measurement; one of %s", cfg.only, strings.Join(onlyNames(), ", "))
		}
		if err := measureOnly(ctx, cfg, &rep); err != nil {
			return err
		}
		return rep.write(cfg.out)
	}

	// The Kubernetes rows need the test node: without it the run stops
	// here, before the long Podman measurements, saying what to run.
	k, err := connectKubernetes(ctx, cfg)
	if err != nil {
		return err
	}
	rep.Machine["kubernetes"] = k.version
	s, err := startSession(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.prepare(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "measuring warm calls in container %s...\n", s.container)
	// A call the server rejects before it reaches the workspace: the cost of
	// the MCP stack alone (stdio, JSON-RPC, schema validation), for reference.
	protocol := measure("rejected call (MCP stack only)", cfg.samples, func(int) error {
		res, err := s.call(ctx, "read_file", map[string]any{"file_path": "/absolute"})
		if err == nil && !res.Result.IsError {
			err = fmt.Errorf("an absolute path was accepted")
		}
		return err
	})
	reads := measure("read_file 4 KiB", cfg.samples, func(int) error {
		return s.expect(ctx, "read_file", map[string]any{"file_path": "bench/read.txt"})
	})
	writes := measure("write_file 4 KiB", cfg.samples, func(int) error {
		return s.expect(ctx, "write_file", map[string]any{"file_path": "bench/write.txt", "content": fourKiB})
	})
	edits := measure("edit_file on 4 KiB", cfg.samples, func(i int) error {
		old, repl := "MARK-A", "MARK-B"
		if i%2 == 1 {
			old, repl = repl, old
		}
		return s.expect(ctx, "edit_file", map[string]any{"file_path": "bench/edit.txt", "old_string": old, "new_string": repl})
	})
	greps := measure("grep over 1,000 files", cfg.samples, func(int) error {
		return s.expect(ctx, "grep", map[string]any{"pattern": "needle-7[0-9]", "path": "bench/grep"})
	})
	shells := measure("podman_shell [\"true\"]", cfg.samples, func(int) error {
		return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"true"}})
	})
	baseline, err := measureExecBaseline(ctx, cfg, s.container, cfg.samples)
	if err != nil {
		return err
	}
	s.close()
	viaMCPGo, err := measureMCPGoRead(ctx, cfg)
	if err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "measuring the Kubernetes engine...\n")
	kube, err := measureKubernetes(ctx, cfg, k)
	if err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "measuring the watch's cost to a command writing 10,000 files...\n")
	watched, unwatched := measureWatchCost(ctx, cfg)
	fmt.Fprintf(os.Stderr, "measuring file calls during a rename storm...\n")
	stormWatched, stormUnwatched := measureStormCalls(ctx, cfg)
	fmt.Fprintf(os.Stderr, "measuring initialize of new processes...\n")
	initializes := measureInitialize(ctx, cfg)
	fmt.Fprintf(os.Stderr, "measuring first calls of new processes...\n")
	first, firstLazy, firstLater, err := measureFirstCalls(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "measuring first calls with a profile...\n")
	profileCached, profileUncached := measureProfiles(ctx, cfg)
	fmt.Fprintf(os.Stderr, "measuring %d concurrent sessions...\n", cfg.sessions)
	load := measureConcurrent(ctx, cfg)
	fmt.Fprintf(os.Stderr, "measuring new sessions over HTTP...\n")
	httpWarm := measureHTTPFirstCalls(ctx, cfg, "HTTP: first call of a new session, --warm 4", cfg.httpSamples, 4)
	httpCold := measureHTTPFirstCalls(ctx, cfg, "HTTP: first call of a new session, --warm 0", cfg.httpSamples, 0)
	fmt.Fprintf(os.Stderr, "measuring read_file at a fixed rate...\n")
	fixed := measureFixedRate(ctx, cfg, "HTTP: read_file, 50 sessions, 100 calls/s in all", 50, 100, 20*time.Second)
	fmt.Fprintf(os.Stderr, "measuring egress throughput...\n")
	egress := measureEgress(ctx, cfg, cfg.egressSamples)
	portPreview := measurePortPreview(ctx, cfg, cfg.egressSamples)
	fmt.Fprintf(os.Stderr, "measuring the egress artefact cache...\n")
	cache := measureEgressCache(ctx, cfg, cfg.egressSamples)
	fmt.Fprintf(os.Stderr, "measuring checkpoints and restores...\n")
	ckFirst, ckLater, ckRestore, ckFigs := measureCheckpoints(ctx, cfg)
	rep.Checkpoints = &ckFigs
	fmt.Fprintf(os.Stderr, "measuring forks of a workspace of 10,000 files / 100 MB...\n")
	forks := measureForks(ctx, cfg)
	fmt.Fprintf(os.Stderr, "measuring bursts of %d sessions over HTTP...\n", cfg.burst)
	burstWarm := measureHTTPBurst(ctx, cfg, fmt.Sprintf("HTTP: %d sessions at once, initialize + first call, --warm %d", cfg.burst, cfg.burst),
		cfg.burst, cfg.burst, "--max-sessions", fmt.Sprint(cfg.burst+14))
	burstCold := measureHTTPBurst(ctx, cfg, fmt.Sprintf("HTTP: %d sessions at once, initialize + first call, --warm 0", cfg.burst),
		cfg.burst, 0, "--max-sessions", fmt.Sprint(cfg.burst+14))
	burst2 := measureHTTPBurst(ctx, cfg, fmt.Sprintf("HTTP: %d sessions at once, initialize + first call, --warm 0", 2*cfg.burst),
		2*cfg.burst, 0, "--max-sessions", "128")

	reads.Target, reads.Met = "p50 <= 1 ms", reads.P50 <= 1
	shells.Target, shells.Met = "p50 <= 2 ms", shells.P50 <= 2
	first.Target, first.Met = "p50 <= 150 ms", first.P50 <= 150
	firstLater.Target, firstLater.Met = "p50 <= 20 ms", firstLater.P50 <= 20
	load.Target, load.Met = "0 errors", load.Errors == 0
	httpWarm.Target, httpWarm.Met = "p50 <= 20 ms", httpWarm.P50 <= 20
	httpCold.Target, httpCold.Met = "p50 <= 100 ms", httpCold.P50 <= 100
	burstWarm.Target, burstWarm.Met = "p99 <= 1 s, 0 errors", burstWarm.P99 <= 1000 && burstWarm.Errors == 0
	burstCold.Target, burstCold.Met = "0 errors", burstCold.Errors == 0
	burst2.Target, burst2.Met = "0 errors", burst2.Errors == 0
	fixed.Target, fixed.Met = "p99 <= 20 ms", fixed.P99 <= 20 && fixed.Errors == 0
	ckLater.Target, ckLater.Met = "p99 <= 1 s", ckLater.P99 <= 1000 && ckLater.Errors == 0
	ckRestore.Target, ckRestore.Met = "p99 <= 1 s", ckRestore.P99 <= 1000 && ckRestore.Errors == 0
	rep.Measurements = append([]measurement{protocol, reads, viaMCPGo, writes, edits, greps, shells, baseline, watched, unwatched, stormWatched, stormUnwatched}, initializes...)
	rep.Measurements = append(rep.Measurements,
		first, firstLazy, firstLater, profileCached, profileUncached, load, httpWarm, httpCold, burstWarm, burstCold, burst2, fixed)
	rep.Measurements = append(append(rep.Measurements, egress.all()...), portPreview.all()...)
	rep.Measurements = append(append(rep.Measurements, cache...), ckFirst, ckLater, ckRestore)
	rep.Measurements = append(rep.Measurements, forks...)
	rep.Measurements = append(rep.Measurements, kube.all()...)
	rep.setKubernetesSpeedup(kube)
	rep.ClosedLoopCallsPerSecond = load.CallsPerSecond
	rep.ReadSpeedup = baseline.P50 / reads.P50
	rep.SpeedupMet = rep.ReadSpeedup >= 50
	rep.setEgressShare(egress.through, egress.direct)
	return rep.write(cfg.out)
}

// egressShareTarget is the share of the direct download's speed the
// proxy's must reach (issue 35).
const egressShareTarget = 0.8

// setEgressShare records the download through the proxy as a share of
// the direct one.
func (r *report) setEgressShare(through, direct measurement) {
	if through.P50 > 0 {
		r.EgressShare = direct.P50 / through.P50
		r.EgressShareMet = r.EgressShare >= egressShareTarget
	}
}

// write prints the report as markdown and how it compares with the
// results out held before (the committed ones, for the default out), and
// saves it as JSON to out.
func (r report) write(out string) error {
	fmt.Print(r.markdown())
	committed, ok, err := readReport(out)
	switch {
	case err != nil:
		fmt.Printf("Not compared with %s: %v\n", out, err)
	case ok:
		fmt.Print(comparison(committed, r))
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// measureFirstCalls times the first tool call of new stdio processes, as a
// desktop client makes it: sent right after initialize, and sent a second
// later (a model's think time, untimed) while the container is made. Both
// keep one cache directory from process to process, as a user's does. The
// baseline is the first call as it was made before containers were made at
// initialize and host facts recorded: --lazy, and a new cache each time.
func measureFirstCalls(ctx context.Context, cfg config) (first, lazy, later measurement, err error) {
	cache, err := os.MkdirTemp("", "wink-bench-cache-")
	if err != nil {
		return first, lazy, later, err
	}
	defer os.RemoveAll(cache)
	var s *session // the process of the sample being measured
	call := func(int) error { return s.expect(ctx, "podman_shell", map[string]any{"command": []string{"true"}}) }
	closeIt := func() { s.close() }
	first = measureSetup("first call of a new stdio process, sent right after initialize", cfg.coldSamples,
		func() (err error) { s, err = startSessionIn(ctx, cfg, cache); return err }, call, closeIt)
	lazy = measureSetup("baseline: the same, --lazy, host facts not recorded (before)", cfg.coldSamples,
		func() (err error) { s, err = startSessionIn(ctx, cfg, "", "--lazy"); return err }, call, closeIt)
	later = measureSetup("first call of a new stdio process, sent 1 s after initialize", cfg.coldSamples,
		func() (err error) {
			if s, err = startSessionIn(ctx, cfg, cache); err == nil {
				time.Sleep(time.Second)
			}
			return err
		}, call, closeIt)
	return first, lazy, later, nil
}

// measureConcurrent runs cfg.sessions sessions at once, each alternating
// writes and reads of its own file, and pools their latencies. Each
// session's container is started first, untimed; then all begin together.
func measureConcurrent(ctx context.Context, cfg config) measurement {
	var (
		mu        sync.Mutex
		durations []time.Duration
		errors    int
		ready     sync.WaitGroup
		wg        sync.WaitGroup
	)
	begin := make(chan struct{})
	ready.Add(cfg.sessions)
	for range cfg.sessions {
		wg.Go(func() {
			s, err := startSession(ctx, cfg)
			if err == nil {
				defer s.close()
				err = s.expect(ctx, "podman_shell", map[string]any{"action": "start"})
			}
			ready.Done()
			<-begin
			if err != nil {
				mu.Lock()
				errors += cfg.sessionOps
				mu.Unlock()
				return
			}
			for i := range cfg.sessionOps {
				start := time.Now()
				var err error
				if i%2 == 0 {
					err = s.expect(ctx, "write_file", map[string]any{"file_path": "mine.txt", "content": fourKiB})
				} else {
					err = s.expect(ctx, "read_file", map[string]any{"file_path": "mine.txt"})
				}
				d := time.Since(start)
				mu.Lock()
				durations = append(durations, d)
				if err != nil {
					errors++
				}
				mu.Unlock()
			}
		})
	}
	ready.Wait()
	start := time.Now()
	close(begin)
	wg.Wait()
	m := summarize(fmt.Sprintf("%d concurrent sessions, reads and writes", cfg.sessions), durations)
	m.Errors = errors
	m.CallsPerSecond = float64(len(durations)) / time.Since(start).Seconds()
	return m
}

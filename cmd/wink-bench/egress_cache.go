package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// cacheArtefact is one artefact the cache measurement fetches: what it
// is, and its URL on a registry this machine is configured to use.
type cacheArtefact struct {
	what string
	url  *url.URL
}

// cacheArtefacts are a Go module zip (about 9 MB) from `go env GOPROXY`,
// an npm tarball (about 6 MB) from `npm config get registry`, and a .deb
// (about 2 MB) at the URL `apt-get download --print-uris` gives, over
// https (the cache keeps nothing fetched in plain http): the registries
// named by this machine's configuration, never by wink-bench.
func cacheArtefacts() ([]cacheArtefact, error) {
	var all []cacheArtefact
	var errs []error
	first := func(what string, argv ...string) string {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", strings.Join(argv, " "), err))
		}
		return strings.Split(strings.TrimSpace(string(out)), ",")[0]
	}
	add := func(what, base, path string) {
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: no registry in this machine's configuration (%q)", what, base))
			return
		}
		u.Scheme = "https"
		all = append(all, cacheArtefact{what, u.JoinPath(path)})
	}
	add("a Go module zip (9 MB)", first("go", "go", "env", "GOPROXY"), "golang.org/x/text/@v/v0.14.0.zip")
	add("an npm tarball (6 MB)", first("npm", "npm", "config", "get", "registry"), "typescript/-/typescript-5.4.5.tgz")
	deb := strings.Fields(first("apt", "apt-get", "download", "--print-uris", "python3.11-minimal"))
	if len(deb) == 0 {
		errs = append(errs, errors.New("apt-get download --print-uris python3.11-minimal gave no URL"))
	} else {
		add("a .deb (2 MB)", strings.Trim(deb[0], "'"), "")
	}
	return all, errors.Join(errs...)
}

// curlTimes is what curl says of one download: the whole (connecting,
// the proxy's CONNECT, TLS with it, the request and the body), the set-up
// (up to TLS done: curl's own TLS start, its CA bundle read, included)
// and the body alone (from its first byte to its last).
type curlTimes struct{ total, setup, body time.Duration }

// measureEgressCache fetches each artefact twice in a session whose proxy
// caches its host, in a new server with an empty cache for each of n
// samples: the first download goes upstream and is stored, the second
// comes from the cache, then a third on the connection the second
// opened. Rows for each artefact: the first two downloads as curl in the
// workspace times them whole (the target: the cached one 10 times
// faster), the cached one's set-up, the third whole, and the first two's
// bodies alone.
func measureEgressCache(ctx context.Context, cfg config, n int) []measurement {
	arts, err := cacheArtefacts()
	if err != nil {
		return []measurement{failed("egress cache: the artefacts", err)}
	}
	args := []string{}
	for _, a := range arts {
		args = append(args, "--egress", a.url.Hostname(), "--egress-cache", a.url.Hostname())
	}
	firsts, hits, kept := make([][]curlTimes, len(arts)), make([][]curlTimes, len(arts)), make([][]curlTimes, len(arts))
	errs := make([]int, len(arts))
	for range n {
		s, err := startSessionIn(ctx, cfg, "", args...)
		if err == nil {
			err = s.prepare(ctx)
		}
		if err != nil {
			for i := range errs {
				errs[i]++
			}
			fmt.Fprintf(os.Stderr, "egress cache: %v\n", err)
			if s != nil {
				s.close()
			}
			continue
		}
		for i, a := range arts {
			miss, err := s.curl(ctx, a.url.String())
			var hit []curlTimes
			if err == nil {
				hit, err = s.curl(ctx, a.url.String(), a.url.String())
			}
			if err != nil {
				errs[i]++
				fmt.Fprintf(os.Stderr, "egress cache: %s: %v\n", a.what, err)
				continue
			}
			firsts[i], hits[i], kept[i] = append(firsts[i], miss[0]), append(hits[i], hit[0]), append(kept[i], hit[1])
		}
		s.close()
	}
	var rows []measurement
	for i, a := range arts {
		pick := func(ts []curlTimes, of func(curlTimes) time.Duration) []time.Duration {
			var d []time.Duration
			for _, t := range ts {
				d = append(d, of(t))
			}
			return d
		}
		total := func(t curlTimes) time.Duration { return t.total }
		body := func(t curlTimes) time.Duration { return t.body }
		first := summarize("egress cache: "+a.what+", first download (stored), curl's total", pick(firsts[i], total))
		cached := summarize("egress cache: the same again, from the cache", pick(hits[i], total))
		setup := summarize("egress cache: the cached download's set-up (connect, CONNECT, TLS with the proxy)", pick(hits[i], func(t curlTimes) time.Duration { return t.setup }))
		again := summarize("egress cache: from the cache on the connection curl kept open (the set-up paid once per host)", pick(kept[i], total))
		firstBody := summarize("egress cache: the first download's body alone (first byte to last)", pick(firsts[i], body))
		cachedBody := summarize("egress cache: the cached download's body alone", pick(hits[i], body))
		for _, m := range []*measurement{&first, &cached, &setup, &again, &firstBody, &cachedBody} {
			m.Errors = errs[i]
		}
		cached.Target = "p50 <= first p50 / 10"
		cached.Met = cached.P50 > 0 && first.P50 >= 10*cached.P50
		again.Target = cached.Target
		again.Met = again.P50 > 0 && first.P50 >= 10*again.P50
		if cached.P50 > 0 && again.P50 > 0 && cachedBody.P50 > 0 {
			fmt.Fprintf(os.Stderr, "egress cache: %s: cached %.1fx faster whole, %.1fx on a kept connection, %.1fx the body alone\n",
				a.what, first.P50/cached.P50, first.P50/again.P50, firstBody.P50/cachedBody.P50)
		}
		rows = append(rows, first, cached, setup, again, firstBody, cachedBody)
	}
	return rows
}

// curl downloads each of targets in turn in the workspace with one curl
// through the proxy (the second and later on the connection the first
// opened) and returns curl's own timings of each (a podman_shell call's
// exec is not in them).
func (s *session) curl(ctx context.Context, targets ...string) ([]curlTimes, error) {
	argv := []string{"curl", "-fsS", "-w", "%{http_code} %{time_appconnect} %{time_starttransfer} %{time_total}\n"}
	for _, t := range targets {
		argv = append(argv, "-o", "/dev/null", t)
	}
	a, err := s.call(ctx, "podman_shell", map[string]any{"command": argv, "timeout_seconds": 120})
	if err != nil {
		return nil, err
	}
	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	_ = json.Unmarshal(a.Result.StructuredContent, &res)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.ExitCode != 0 || len(lines) != len(targets) {
		return nil, fmt.Errorf("curl exited %d: %s %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	s2d := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	var all []curlTimes
	for _, line := range lines {
		var code int
		var tls, start, total float64
		if _, err := fmt.Sscanf(line, "%d %f %f %f", &code, &tls, &start, &total); err != nil || code != 200 {
			return nil, fmt.Errorf("curl: %q %v %s", line, err, res.Stderr)
		}
		all = append(all, curlTimes{total: s2d(total), setup: s2d(tls), body: s2d(total - start)})
	}
	return all, nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// cacheArtefact is the module zip the artefact cache measurement fetches
// from this machine's Go module proxy: about 9 MB.
const cacheArtefact = "golang.org/x/text/@v/v0.14.0.zip"

// measureEgressCache fetches one artefact from this machine's Go module
// proxy (read from `go env GOPROXY`) in a session whose proxy caches that
// host, n times, each in a new server with an empty cache: the first
// download goes upstream and is stored, the second, in the same session,
// comes from the cache. The target is the cached one 10 times faster; a
// module proxy on this machine's own network answers nearly as fast as
// the cache does, so the ratio says as much about the network as about
// the cache.
func measureEgressCache(ctx context.Context, cfg config, n int) (first, cached measurement) {
	firstName := "egress cache: a Go module zip (9 MB) from the module proxy, first download (stored)"
	cachedName := "egress cache: the same zip again, from the cache"
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	proxyURL, perr := url.Parse(strings.Split(strings.TrimSpace(string(out)), ",")[0])
	if err != nil || perr != nil || proxyURL.Scheme != "https" {
		err = fmt.Errorf("this machine has no https Go module proxy (go env GOPROXY: %q %v)", out, err)
		return failed(firstName, err), failed(cachedName, err)
	}
	target := proxyURL.JoinPath(cacheArtefact).String()
	// curl's own total (CONNECT, TLS with the proxy, the body) is the
	// measure: a podman_shell call's exec adds the same 20-100 ms to both.
	fetch := func(s *session) (time.Duration, error) {
		a, err := s.call(ctx, "podman_shell", map[string]any{"command": []string{"sh", "-c",
			"curl -fsS -o /dev/null -w '%{http_code} %{time_total}' " + target}, "timeout_seconds": 120})
		if err != nil {
			return 0, err
		}
		var res struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
		}
		_ = json.Unmarshal(a.Result.StructuredContent, &res)
		var code int
		var seconds float64
		if _, err := fmt.Sscanf(res.Stdout, "%d %f", &code, &seconds); err != nil || res.ExitCode != 0 || code != 200 {
			return 0, fmt.Errorf("curl exited %d: %s %s", res.ExitCode, res.Stdout, res.Stderr)
		}
		return time.Duration(seconds * float64(time.Second)), nil
	}
	var firsts, hits []time.Duration
	errs := 0
	for range n {
		s, err := startSessionIn(ctx, cfg, "", "--egress", proxyURL.Hostname(), "--egress-cache", proxyURL.Hostname())
		if err == nil {
			err = s.prepare(ctx)
		}
		var miss, hit time.Duration
		if err == nil {
			miss, err = fetch(s)
		}
		if err == nil {
			hit, err = fetch(s)
		}
		if s != nil {
			s.close()
		}
		if err != nil {
			errs++
			fmt.Fprintf(os.Stderr, "%s: %v\n", firstName, err)
			continue
		}
		firsts, hits = append(firsts, miss), append(hits, hit)
	}
	first, cached = summarize(firstName, firsts), summarize(cachedName, hits)
	first.Errors, cached.Errors = errs, errs
	cached.Target = "p50 <= first p50 / 10"
	cached.Met = cached.P50 > 0 && first.P50 >= 10*cached.P50
	return first, cached
}

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wink-mcp/wink-mcp/audit"
)

// TestObservabilityAuditsAndCountsCalls runs the real binary over HTTP
// with a token, an audit log and metrics, against real Podman: an ok
// call, a tool error, bad arguments and a refused request. The audit
// file holds one valid record per call with the digest of the arguments
// sent and none of their content; a scrape, read by the Prometheus text
// parser, counts the same calls.
func TestObservabilityAuditsAndCountsCalls(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	p := launch(t, startOptions{transport: "http", args: []string{"--auth-token", testToken, "--audit-log", auditPath, "--metrics-addr", "127.0.0.1:0"}})
	metricsURL := p.waitLog(5*time.Second, "serving metrics", nil)["url"].(string)
	if status, _ := post(t, p.url, map[string]string{"Authorization": "Bearer not-the-token-not-the-token"}, initializeBody); status != 401 {
		t.Fatalf("a wrong token: status %d, want 401", status)
	}
	p.connect(map[string]string{"Authorization": "Bearer " + testToken})

	secret := "canary-" + randomHex(8) + "\n{\"event\":\"call\",\"tool\":\"forged\"}\xff"
	calls := []struct {
		tool    string
		args    map[string]any
		outcome audit.Outcome
	}{
		{tool: "podman_shell", args: map[string]any{"command": []string{"cat"}, "stdin": secret}, outcome: audit.OK},
		{tool: "read_file", args: map[string]any{"file_path": "missing-" + secret}, outcome: audit.ToolError},
		{tool: "podman_shell", args: map[string]any{"argv": secret}, outcome: audit.ToolError}, // bad arguments: no such field
	}
	for _, c := range calls {
		res := p.call(c.tool, c.args)
		if res.IsError != (c.outcome != audit.OK) {
			t.Fatalf("%s %v: isError %v, want outcome %s: %s", c.tool, c.args, res.IsError, c.outcome, textOf(res))
		}
	}

	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(auditPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v, want 0600", fi.Mode().Perm())
	}
	if bytes.Contains(raw, []byte("canary-")) {
		t.Fatalf("the audit log holds an argument's content:\n%s", raw)
	}
	var got []audit.Record
	refusals := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not one valid record a line: %v: %q", err, sc.Text())
		}
		switch r.Event {
		case audit.EventCall:
			got = append(got, r)
		case audit.EventRefused:
			if r.Status == 401 && r.Reason == "token" {
				refusals++
			}
		}
	}
	if len(got) != len(calls) || refusals != 1 {
		t.Fatalf("%d call records and %d token refusals, want %d and 1:\n%s", len(got), refusals, len(calls), raw)
	}
	for i, c := range calls {
		sent, _ := json.Marshal(c.args) // what mcp-go's client sends
		size, sha := audit.Digest(json.RawMessage(sent))
		r := got[i]
		if r.Tool != c.tool || r.Outcome != c.outcome || r.ArgsBytes != size || r.ArgsSHA256 != sha || r.Principal == "" || r.Session == "" || r.DurationMS <= 0 {
			t.Errorf("record %d = %+v, want tool %s, outcome %s, %d bytes, sha256 %s, a principal, a session and a duration", i, r, c.tool, c.outcome, size, sha)
		}
	}

	families := scrapeMetrics(t, metricsURL)
	checks := []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{family: "wink_tool_calls_total", labels: map[string]string{"tool": "podman_shell", "outcome": "ok"}, want: 1},
		{family: "wink_tool_calls_total", labels: map[string]string{"tool": "podman_shell", "outcome": "tool_error"}, want: 1},
		{family: "wink_tool_calls_total", labels: map[string]string{"tool": "read_file", "outcome": "tool_error"}, want: 1},
		{family: "wink_tool_call_duration_seconds", labels: map[string]string{"tool": "podman_shell"}, want: 2},
		{family: "wink_refusals_total", labels: map[string]string{"reason": "token"}, want: 1},
		{family: "wink_sessions_open", want: 1},
		{family: "wink_audit_write_failures_total", want: 0},
		{family: "wink_containers", labels: map[string]string{"state": "in_use"}, want: 1},
		{family: "wink_warm_pool_target", want: 2}, // --warm auto over HTTP
	}
	for _, c := range checks {
		if got := sampleValue(families, c.family, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if families["process_resident_memory_bytes"] == nil || families["go_goroutines"] == nil {
		t.Error("the Go and process collectors are missing")
	}
}

// scrapeMetrics reads one scrape of url with the Prometheus text parser.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return families
}

// sampleValue returns the value (a histogram's count) of the sample of
// family whose labels include labels, -1 if there is none.
func sampleValue(families map[string]*dto.MetricFamily, family string, labels map[string]string) float64 {
next:
	for _, m := range families[family].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestObservabilityCountsEgressBytes sends one request through a real
// container's egress proxy and scrapes wink_egress_bytes_total: it counts
// at least the response's body.
func TestObservabilityCountsEgressBytes(t *testing.T) {
	port := httpServerOnLoopback(t, "local model server")
	p := start(t, startOptions{transport: "http", image: pythonImage, args: []string{"--warm", "0", "--egress", "localhost:" + port, "--metrics-addr", "127.0.0.1:0"}})
	metricsURL := p.waitLog(5*time.Second, "serving metrics", nil)["url"].(string)
	if got := sampleValue(scrapeMetrics(t, metricsURL), "wink_egress_bytes_total", nil); got != 0 {
		t.Fatalf("before any egress: wink_egress_bytes_total = %v, want 0", got)
	}
	out := rawProxy(t, p, "GET http://localhost:"+port+"/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	if !strings.Contains(out, "local model server") {
		t.Fatalf("through the proxy: %q", out)
	}
	var got float64
	waitUntil(t, 10*time.Second, "egress bytes counted", func() bool {
		got = sampleValue(scrapeMetrics(t, metricsURL), "wink_egress_bytes_total", nil)
		return got >= float64(len("local model server"))
	})
}

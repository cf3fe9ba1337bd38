package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// toolDescription returns the description the server advertises for a tool.
func toolDescription(t *testing.T, p *proc, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := p.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == name {
			return tool.Description
		}
	}
	t.Fatalf("no tool %s", name)
	return ""
}

// What workspace_port's description and the prompt say about servers is
// what happens: a server a background job runs stays reachable through
// the URL after the call that started it returned, until the job is
// signalled; one a foreground call leaves behind stops with the call; the
// URL refuses a request naming another host.
func TestWorkspacePortDescriptionHolds(t *testing.T) {
	p := start(t, startOptions{image: pythonImage, args: []string{"--warm", "0"}})
	desc, prompt := toolDescription(t, p, "workspace_port"), p.promptText()
	for _, claim := range []string{"Start the server as a background job", "stays reachable until the job ends or is signalled",
		"one started in the foreground ends, and stops answering, when its call returns", "name it 127.0.0.1 or localhost"} {
		if !strings.Contains(desc, claim) {
			t.Errorf("workspace_port's description lacks %q:\n%s", claim, desc)
		}
	}
	if strings.Contains(desc, "Nothing outlives") {
		t.Errorf("workspace_port's description still says nothing outlives its call:\n%s", desc)
	}
	if !strings.Contains(prompt, "`workspace_port` shows it to the user at a URL on their machine until the job ends") {
		t.Errorf("the prompt does not say how to show a job's server:\n%s", prompt)
	}
	if res := p.call("write_file", map[string]any{"file_path": "site/index.html", "content": "from a job\n"}); res.IsError {
		t.Fatal(textOf(res))
	}

	// A background job's server, after its call returned.
	job := p.shell(map[string]any{"command": []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"}, "background": true})
	url := openPort(t, p, 8000)
	waitUntil(t, 10*time.Second, "the job's server through the URL", func() bool {
		status, body := fetch(url)
		return status == http.StatusOK && body == "from a job\n"
	})
	if status, body := fetchHost(url, "attacker.example"); status != http.StatusForbidden {
		t.Errorf("a request naming another host: %d %q; want a 403", status, body)
	}
	p.job(map[string]any{"action": "signal", "id": job.Job, "signal": "TERM"})
	waitUntil(t, 10*time.Second, "the signalled job's server to stop answering", func() bool {
		status, body := fetch(url)
		return status == http.StatusBadGateway && strings.Contains(body, "nothing answers on port 8000")
	})

	// A server a foreground call leaves behind ends with the call.
	url = openPort(t, p, 8001)
	p.run("sh", "-c", "python3 -m http.server 8001 --bind 127.0.0.1 --directory site >/dev/null 2>&1 & "+
		"for i in $(seq 50); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8001), 1)' 2>/dev/null && break; sleep 0.1; done")
	if status, body := fetch(url); status != http.StatusBadGateway || !strings.Contains(body, "nothing answers on port 8001") {
		t.Errorf("after the foreground call returned: %d %q; want the 502 page", status, body)
	}
}

// fetchHost GETs url naming host in the Host header.
func fetchHost(url, host string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b := new(strings.Builder)
	_, _ = io.Copy(b, resp.Body)
	return resp.StatusCode, b.String()
}

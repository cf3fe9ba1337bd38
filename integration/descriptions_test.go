package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
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

// What the prompt and the descriptions say of handoff, jobs and ports is
// what happens over streamable HTTP: a handed-over workspace keeps its
// container, job and port until another session attaches it, and gets
// them; a restore ends the job; the container goes when the attaching
// session ends; a workspace not attached before its handle expires is
// removed.
func TestHandoffDescriptionsHold(t *testing.T) {
	p := start(t, startOptions{transport: "http", image: pythonImage, args: unpooled})
	prompt := p.promptText()
	for _, claim := range []string{"When the session ends, the container and the files in `/workspace` go with it, unless you first hand the workspace to another session with `workspace_handoff`: it then waits for that session's `workspace_attach` until the handle expires",
		"with its running container, jobs and open ports when both sessions are served by this server"} {
		if !strings.Contains(prompt, claim) {
			t.Errorf("the prompt lacks %q:\n%s", claim, prompt)
		}
	}
	if strings.Contains(prompt, "removed when it ends") {
		t.Errorf("the prompt still says the container is removed when the session ends:\n%s", prompt)
	}
	for tool, claim := range map[string]string{
		"workspace_port":    "go with a workspace handed over with its container (workspace_handoff), open for the session that attaches it",
		"workspace_handoff": "a workspace not attached by then is removed if it kept its container",
		"workspace_attach":  "with the running container, jobs and open ports it kept",
		"job":               "with a restore (workspace_restore)",
	} {
		if desc := toolDescription(t, p, tool); !strings.Contains(desc, claim) {
			t.Errorf("%s's description lacks %q:\n%s", tool, claim, desc)
		}
	}
	if res := p.call("write_file", map[string]any{"file_path": "site/index.html", "content": "handed over\n"}); res.IsError {
		t.Fatal(textOf(res))
	}
	name := p.container()
	job := p.shell(map[string]any{"command": []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"}, "background": true})
	url := openPort(t, p, 8000)
	answers := func() bool { status, body := fetch(url); return status == http.StatusOK && body == "handed over\n" }
	waitUntil(t, 10*time.Second, "the job's server through the URL", answers)
	checkpoint := p.call("workspace_checkpoint", map[string]any{"message": "served"})
	if checkpoint.IsError {
		t.Fatal(textOf(checkpoint))
	}

	res := p.call("workspace_handoff", map[string]any{"expires_in_seconds": 600})
	var h struct {
		Handle        string `json:"handle"`
		KeptContainer bool   `json:"kept_container"`
	}
	decodeStructured(t, res, &h)
	if !h.KeptContainer || !containerExists(t, name) || !answers() {
		t.Errorf("handed over: kept_container %v, container there %v, URL answers %v; want all while it waits for its attach", h.KeptContainer, containerExists(t, name), answers())
	}
	q := p.sibling(nil, "")
	res = q.call("workspace_attach", map[string]any{"handle": h.Handle})
	var attached struct {
		KeptContainer bool `json:"kept_container"`
	}
	if res.IsError {
		t.Fatalf("attach: %s", textOf(res))
	}
	if decodeStructured(t, res, &attached); !attached.KeptContainer {
		t.Errorf("attach: %s; want the container kept", textOf(res))
	}
	if st := jobState(q, job.Job); st != "running" || !answers() {
		t.Errorf("after the attach: job %s, URL answers %v; want the job running and its URL open", st, answers())
	}
	if res := q.call("workspace_restore", map[string]any{"checkpoint": "c1"}); res.IsError {
		t.Fatalf("restore: %s", textOf(res))
	}
	if st := jobState(q, job.Job); st == "running" {
		t.Errorf("the job still runs after a restore")
	}
	q.endSession()
	waitUntil(t, time.Minute, "the attached workspace's container to go with its session", func() bool { return !containerExists(t, name) })

	// Not attached in time: removed.
	fresh := p.container()
	res = p.call("workspace_handoff", map[string]any{"expires_in_seconds": 1})
	if res.IsError {
		t.Fatal(textOf(res))
	}
	waitUntil(t, time.Minute, "a workspace nobody attached to be removed when its handle expires", func() bool { return !containerExists(t, fresh) })
}

// What the prompt says of idleness happens: a container idle past
// --idle-timeout is removed and the next call finds the files in a new
// one; a running job keeps it until --max-job-age.
func TestIdleDescriptionHolds(t *testing.T) {
	p := start(t, startOptions{args: append([]string{"--idle-timeout", "2s", "--max-job-age", "6s"}, unpooled...)})
	if prompt, claim := p.promptText(), "After 2 seconds without a call the container is removed (kept while background jobs run, for up to 6 seconds) and the next call makes a new one on the same files: processes end, files stay."; !strings.Contains(prompt, claim) {
		t.Errorf("the prompt lacks %q:\n%s", claim, prompt)
	}
	p.run("sh", "-c", "echo kept > f.txt")
	p.waitLog(time.Minute, "workspace idle_cleanup", nil)
	if got := p.run("cat", "f.txt"); got.Stdout != "kept\n" {
		t.Errorf("after the idle clean-up the file reads %q", got.Stdout)
	}
	cleanups := p.logs.count("idle_cleanup")
	began := time.Now() // before the job starts: its age at the clean-up is at most the time since
	job := p.shell(map[string]any{"command": []string{"sleep", "600"}, "background": true})
	waitUntil(t, time.Minute, "the idle clean-up of a container with a running job", func() bool { return p.logs.count("idle_cleanup") > cleanups })
	if held := time.Since(began); held < 6*time.Second {
		t.Errorf("a running job kept the idle container %s, less than --max-job-age 6s (job %s)", held, job.Job)
	}
}

// jobState is the state of job id in p's workspace, or the error that
// says it has none.
func jobState(p *proc, id string) string {
	p.t.Helper()
	res := p.call("job", map[string]any{"action": "status", "id": id})
	if res.IsError {
		return textOf(res)
	}
	var r tools.JobResult
	decodeStructured(p.t, res, &r)
	if r.Job == nil {
		return "no job"
	}
	return r.Job.State
}

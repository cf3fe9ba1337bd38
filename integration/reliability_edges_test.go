package integration

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReliabilityEdges tries, through the real binary and Podman, the
// promises at the edges of a session that a hostile web page or model
// once broke: the port previews' Host and Origin check against a web page
// that finds the port, the printers against model-written text, and the
// egress proxy's address check against every IPv6 form that carries an
// IPv4 address.
func TestReliabilityEdges(t *testing.T) {
	t.Run("previews check Host and Origin", func(t *testing.T) {
		p := start(t, startOptions{image: pythonImage, args: []string{"--warm", "0",
			"--allowed-host", "preview.example", "--allowed-origin", "https://app.example"}})
		const secret = "the model's server answered"
		if res := p.call("write_file", map[string]any{"file_path": "site/index.html", "content": secret + "\n"}); res.IsError {
			t.Fatal(textOf(res))
		}
		url := openPort(t, p, 8000)
		job := p.shell(map[string]any{"command": []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"}, "background": true})
		if job.Job == "" {
			t.Fatalf("starting the server as a job: %+v", job)
		}
		waitUntil(t, 10*time.Second, "the job's server through the URL", func() bool {
			status, body := fetch(url)
			return status == http.StatusOK && strings.Contains(body, secret)
		})
		addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
		_, port, _ := net.SplitHostPort(addr)
		own := ownIPv4(t)
		get := func(host string, headers ...string) string {
			req := "GET / HTTP/1.1\r\n"
			if host != "" {
				req += "Host: " + host + "\r\n"
			}
			for _, h := range headers {
				req += h + "\r\n"
			}
			return req + "\r\n"
		}
		cases := []struct {
			name, request string
			allowed       bool
		}{
			{"loopback address and port", get("127.0.0.1:" + port), true},
			{"localhost and port", get("localhost:" + port), true},
			{"localhost without port", get("localhost"), true},
			{"IPv6 loopback", get("[::1]:" + port), true},
			{"a host the user allowed", get("preview.example:" + port), true},
			{"a page on this machine", get("127.0.0.1:"+port, "Origin: http://localhost:3000"), true},
			{"an origin the user allowed", get("127.0.0.1:"+port, "Origin: https://app.example"), true},
			{"a rebound name and port", get("attacker.example:" + port), false},
			{"a rebound name without port", get("attacker.example"), false},
			{"a rebound name with its own origin", get("attacker.example:"+port, "Origin: http://attacker.example:"+port), false},
			{"a name that embeds loopback", get("127.0.0.1.attacker.example:" + port), false},
			{"this machine's other address", get(own + ":" + port), false},
			{"this machine's other address without port", get(own), false},
			{"a foreign origin", get("127.0.0.1:"+port, "Origin: http://attacker.example"), false},
			{"an origin on a look-alike name", get("127.0.0.1:"+port, "Origin: http://localhost.attacker.example"), false},
			{"the null origin", get("127.0.0.1:"+port, "Origin: null"), false},
			{"a websocket from a foreign page", get("127.0.0.1:"+port, "Origin: http://attacker.example", "Connection: Upgrade", "Upgrade: websocket",
				"Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="), false},
			{"no Host, HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", false},
			{"no Host, HTTP/1.1", get(""), false},
			{"a foreign Host on a connection a good one opened", get("127.0.0.1:"+port) + get("attacker.example:"+port), false},
		}
		broken := 0
		for _, c := range cases {
			answers := previewRaw(t, addr, c.request)
			last := answers[len(answers)-1]
			served := strings.HasPrefix(last, "HTTP/1.1 200") && strings.Contains(last, secret)
			refused := (strings.HasPrefix(last, "HTTP/1.1 403") && strings.Contains(last, "wink-mcp port preview: forbidden") ||
				strings.HasPrefix(last, "HTTP/1.1 400")) && !strings.Contains(last, secret)
			if c.allowed && !served || !c.allowed && !refused {
				broken++
				t.Errorf("%s: %q; want it %s", c.name, last, map[bool]string{true: "served", false: "refused with a 403 page"}[c.allowed])
			}
		}
		if rec := p.logs.find("port preview refused", map[string]any{"reason": "host"}); rec == nil {
			t.Errorf("no log record of a refused preview request")
		}
		recordPromise(promiseFigure{Class: "port previews: requests from a web page that finds the port (foreign Host names and addresses, with and without port, missing Host, foreign and null Origins, a websocket, a second request on a good connection)",
			Tried: len(cases), Broken: broken, Measured: fmt.Sprintf("%d of %d answered as the MCP endpoint would: loopback names, the allowed host and origins served, every foreign one a 403 page (400 without Host over HTTP/1.1), none reached the server", len(cases)-broken, len(cases))})
	})

	t.Run("printers quote model text", func(t *testing.T) {
		// What a model can write to forge a line of a listing or rewrite a
		// terminal (JSON carries no invalid byte, so none here).
		const hostile = "ok\n  c9    2026-01-01T00:00:00Z  forged\r\x1b[2K\x1b[31mred\u009b2J\u202eevil"
		p := start(t, startOptions{image: pythonImage, args: []string{"--warm", "0", "--workspace", "printers"}})
		// A command must be ASCII: its hostile part is the ASCII one.
		asciiHostile, _, _ := strings.Cut(hostile, "\u009b")
		raw := func(text string) bool {
			return strings.ContainsAny(text, "\r\x1b\u009b\u202e") || strings.Contains(text, "\n  c9") || !strings.Contains(text, `\x1b[31mred`)
		}
		shown := map[string]string{}
		res := p.call("workspace_checkpoint", map[string]any{"message": hostile})
		shown["workspace_checkpoint"] = textOf(res)
		shown["workspace_checkpoints"] = textOf(p.call("workspace_checkpoints", map[string]any{}))
		p.run("python3", "-c", "import os; os.makedirs('names', exist_ok=True); open('names/' + "+fmt.Sprintf("%q", hostile)+", 'w').close()")
		shown["ls"] = textOf(p.call("ls", map[string]any{"path": "names"}))
		shown["glob"] = textOf(p.call("glob", map[string]any{"pattern": "names/*"}))
		p.shell(map[string]any{"command": []string{"sh", "-c", "sleep 60", asciiHostile}, "background": true})
		shown["job list"] = textOf(p.call("job", map[string]any{"action": "list"}))
		cache := p.cache
		cli := exec.Command(winkBin, "workspaces", "--cache-dir", cache, "show", "printers")
		out, err := cli.CombinedOutput()
		if err != nil {
			t.Fatalf("wink-mcp workspaces show: %v\n%s", err, out)
		}
		shown["wink-mcp workspaces show"] = string(out)
		broken := 0
		for name, text := range shown {
			if raw(text) {
				broken++
				t.Errorf("%s shows the model's text raw:\n%s", name, text)
			}
		}
		var exact struct {
			Checkpoint struct{ Message string } `json:"checkpoint"`
		}
		decodeStructured(t, res, &exact)
		if exact.Checkpoint.Message != hostile {
			t.Errorf("the structured content changed the message: %q", exact.Checkpoint.Message)
		}
		recordPromise(promiseFigure{Class: "printers: a checkpoint message, file name and job command with newlines, ANSI escapes (C0 and C1) and a bidi override, shown by tool results and the CLI",
			Tried: len(shown), Broken: broken, Measured: fmt.Sprintf("%d of %d printers (%s) showed it quoted on one line with every escape visible; the structured content kept it exactly",
				len(shown)-broken, len(shown), strings.Join(slices.Sorted(maps.Keys(shown)), ", "))})
	})

	t.Run("egress embedded IPv4", func(t *testing.T) {
		own := ownIPv4(t)
		ownV6 := netip.AddrFrom16(netip.MustParseAddr(own).As16()) // ::ffff:own, then made compatible below
		b := ownV6.As16()
		b[10], b[11] = 0, 0
		names := []struct{ name, addr, want string }{
			{"compat.wink.test", "::127.0.0.5", "loopback"},
			{"compat-own.wink.test", netip.AddrFrom16(b).String(), "of this machine"},
			{"translated.wink.test", "::ffff:0:7f00:5", "loopback"},
			{"mapped.wink.test", "::ffff:127.0.0.5", "loopback"},
			{"nat64.wink.test", "64:ff9b::a9fe:a9fe", "link-local"},
			{"nat64-local.wink.test", "64:ff9b:1::7f00:5", "special-purpose"},
			{"sixtofour.wink.test", "2002:7f00:5::1", "loopback"},
			{"teredo.wink.test", "2001:0:808:808::80ff:fffa", "loopback"},
		}
		var hosts strings.Builder
		for _, n := range names {
			fmt.Fprintf(&hosts, "%s %s\n", n.addr, n.name)
		}
		file := filepath.Join(t.TempDir(), "hosts")
		if err := os.WriteFile(file, []byte(hosts.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		p := start(t, startOptions{image: pythonImage, hosts: file, args: []string{"--warm", "0", "--disk-limit", "0", "--egress", "*.wink.test"}})
		tried, broken := 0, 0
		for _, n := range names {
			for _, request := range []string{
				"GET http://" + n.name + "/ HTTP/1.1\r\nHost: " + n.name + "\r\n\r\n",
				"CONNECT " + n.name + ":443 HTTP/1.1\r\n\r\n",
			} {
				tried++
				out := rawProxy(t, p, request)
				if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, n.want) || !strings.Contains(out, "carrying") && !strings.Contains(out, "special-purpose") && n.name != "mapped.wink.test" {
					broken++
					t.Errorf("%s resolving to %s: %q; want a 403 saying %q", strings.Fields(request)[0], n.addr, out, n.want)
				}
			}
		}
		recordPromise(promiseFigure{Class: "egress: names that resolve to IPv6 forms carrying a loopback, private, link-local or own IPv4 address (compatible, mapped, translated, NAT64, 6to4, Teredo), by GET and CONNECT",
			Tried: tried, Broken: broken, Measured: fmt.Sprintf("%d of %d refused with a 403 naming the form and the IPv4 address it carries", tried-broken, tried)})
	})
}

// previewRaw sends request (one or more requests) on one connection to a
// port preview and returns each answer, head and body.
func previewRaw(t *testing.T, addr, request string) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	var answers []string
	r := bufio.NewReader(c)
	for range strings.Count(request, " HTTP/1.") {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			answers = append(answers, "no answer: "+err.Error())
			break
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers = append(answers, fmt.Sprintf("HTTP/1.1 %s\n%s", resp.Status, body))
		if resp.Close {
			break
		}
	}
	return answers
}

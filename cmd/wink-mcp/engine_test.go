//go:build containers_image_openpgp

package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/engine/podman"
)

// The packages below this command test an engine they are handed; these
// tests check what the command builds from its flags: the Podman engine,
// its words for a service that cannot be reached, through serve and doctor.

// noService returns the flags of a Podman service that is not there.
func noService(t *testing.T) (url string, args []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	url = "unix://" + t.TempDir() + "/no-podman.sock"
	return url, []string{"--podman-url", url, "--cache-dir", t.TempDir(), "--image", "localhost/test-image:1", "--agent-binary", self}
}

func TestUnreachablePodmanIsAClearToolError(t *testing.T) {
	_, args := noService(t)
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		code := run(args, serverIn, serverOut, io.Discard)
		// A server that did not start fails the client's calls, not hangs them.
		serverIn.CloseWithError(io.ErrClosedPipe)
		serverOut.Close()
		exited <- code
	}()
	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader(""))))
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	var req mcp.CallToolRequest
	req.Params.Name = "podman_shell"
	req.Params.Arguments = map[string]any{"command": []string{"true"}}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(mcp.TextContent).Text
	for _, want := range []string{"cannot reach the Podman service", "no-podman.sock", "podman system service"} {
		if !res.IsError || !strings.Contains(text, want) {
			t.Errorf("error %q lacks %q", text, want)
		}
	}
	clientOut.Close()
	if code := <-exited; code != 0 {
		t.Errorf("serve exited %d at the end of its input, want 0", code)
	}
}

func TestDoctorNamesTheUnreachablePodmanServiceAndItsFix(t *testing.T) {
	url, args := noService(t)
	var out strings.Builder
	if code := run(append([]string{"doctor"}, args...), strings.NewReader(""), &out, io.Discard); code != 1 {
		t.Errorf("doctor without a service exited %d, want 1:\n%s", code, out.String())
	}
	for _, want := range []string{
		"FAIL  service       cannot reach the Podman service (tried " + url,
		"                    fix: " + podman.ServiceRemedy,
		"skip  runtime       not checked: needs the service",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

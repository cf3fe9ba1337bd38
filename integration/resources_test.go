package integration

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func (p *proc) readResource(uri string) (string, error) {
	p.t.Helper()
	var req mcp.ReadResourceRequest
	req.Params.URI = uri
	res, err := p.client.ReadResource(context.Background(), req)
	if err != nil {
		return "", err
	}
	return res.Contents[0].(mcp.TextResourceContents).Text, nil
}

// TestResources reads the snapshot and file resources and checks that a
// subscribed client hears when a tool changes a file, over each transport.
func TestResources(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		var mu sync.Mutex
		var updated []string
		p.client.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/resources/updated" {
				mu.Lock()
				updated = append(updated, n.Params.AdditionalFields["uri"].(string))
				mu.Unlock()
			}
		})
		for _, uri := range []string{"wink://workspace/files/src/main.py", "wink://workspace/snapshot"} {
			var sub mcp.SubscribeRequest
			sub.Params.URI = uri
			//lint:ignore SA1019 clients of the protocol before 2026-07-28 still subscribe this way; the server serves them
			if err := p.client.Subscribe(context.Background(), sub); err != nil {
				t.Fatalf("subscribe %s: %v", uri, err)
			}
		}
		p.tool("write_file", map[string]any{"file_path": "src/main.py", "content": "print('hi')\n"}, &struct{}{})
		p.tool("write_file", map[string]any{"file_path": "other.txt", "content": "x"}, &struct{}{})
		p.tool("edit_file", map[string]any{"file_path": "src/main.py", "old_string": "hi", "new_string": "hello"}, &struct{}{})

		text, err := p.readResource("wink://workspace/files/src/main.py")
		if err != nil || text != "print('hello')\n" {
			t.Errorf("file resource: %q, %v", text, err)
		}
		if text, err := p.readResource("wink://workspace/files/src%2Fmain.py"); err != nil || text != "print('hello')\n" {
			t.Errorf("percent-encoded file resource: %q, %v", text, err)
		}
		snap, err := p.readResource("wink://workspace/snapshot")
		if err != nil {
			t.Fatal(err)
		}
		var parsed struct {
			Files []struct {
				Path, URI string
				Version   int
				SizeBytes int64 `json:"size_bytes"`
			}
		}
		if err := json.Unmarshal([]byte(snap), &parsed); err != nil || len(parsed.Files) != 2 {
			t.Fatalf("snapshot %s: %v", snap, err)
		}
		if f := parsed.Files[1]; f.Path != "src/main.py" || f.Version != 2 || f.URI != "wink://workspace/files/src/main.py" || f.SizeBytes != 15 {
			t.Errorf("snapshot entry %+v", f)
		}
		waitUntil(t, 5*time.Second, "resource updates", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(updated, "wink://workspace/files/src/main.py") && slices.Contains(updated, "wink://workspace/snapshot")
		})
		mu.Lock()
		for _, uri := range updated {
			if uri == "wink://workspace/files/other.txt" {
				t.Error("notified about a file nobody subscribed to")
			}
		}
		mu.Unlock()
		if _, err := p.readResource("wink://workspace/files/../etc/passwd"); err == nil {
			t.Error("a resource outside the workspace was read")
		}
		// Files whose URIs a handle's templates also match (workspace
		// "files") are still this session's.
		p.tool("write_file", map[string]any{"file_path": "snapshot", "content": "a file\n"}, &struct{}{})
		p.tool("write_file", map[string]any{"file_path": "files/x", "content": "another\n"}, &struct{}{})
		for uri, want := range map[string]string{"wink://workspace/files/snapshot": "a file\n", "wink://workspace/files/files/x": "another\n"} {
			if text, err := p.readResource(uri); err != nil || text != want {
				t.Errorf("%s: %q, %v", uri, text, err)
			}
		}
		templates, err := p.client.ListResourceTemplates(context.Background(), mcp.ListResourceTemplatesRequest{})
		if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate.Raw() != "wink://workspace/files/{+path}" {
			t.Errorf("a session's templates: %+v, %v", templates, err)
		}
	})
}

// TestResourcesAreScopedToTheSession reads another session's file by URI.
func TestResourcesAreScopedToTheSession(t *testing.T) {
	p := start(t, startOptions{transport: "http"})
	other := &proc{t: t, transport: "http", url: p.url, logs: p.logs}
	other.connect(nil)
	p.tool("write_file", map[string]any{"file_path": "secret.txt", "content": "mine"}, &struct{}{})
	if text, err := other.readResource("wink://workspace/files/secret.txt"); err == nil {
		t.Errorf("another session read %q", text)
	}
	if snap := other.snapshot(); len(snap.Files) != 0 {
		t.Errorf("another session's snapshot shows %+v", snap.Files)
	}
}

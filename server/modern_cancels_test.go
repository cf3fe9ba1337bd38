package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestModernCancelIsPerPrincipal: a 2026-07-28 notifications/cancelled
// over HTTP stops only its own principal's request of that id, however
// the id is written (number, string, spaces, a null id member); every
// other POST reaches mcp-go with its body intact.
func TestModernCancelIsPerPrincipal(t *testing.T) {
	t.Parallel()
	mc := newModernCancels()
	var passed []string
	h := mc.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		passed = append(passed, string(b))
	}))
	post := func(principal, version, body string) int {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		if version != "" {
			r.Header.Set("Mcp-Protocol-Version", version)
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, principal))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	inflight := func(principal, id string) context.Context {
		ctx := withStopper(context.WithValue(context.Background(), principalKey{}, principal))
		mc.started(ctx, []byte(id))
		return ctx
	}
	alice5, aliceListen := inflight("alice", "5"), inflight("alice", `"listen:0"`)
	bob5 := inflight("bob", "5")
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":5}}`,
		`{"jsonrpc":"2.0","method":"notifications\/cancelled","params":{"requestId":"listen:0"}}`,
		`{"jsonrpc":"2.0","method":"notifications/\u0063ancelle\u0064","params":{"requestId":"listen:0"}}`,
	} {
		if code := post("bob", "2026-07-28", body); code != http.StatusAccepted {
			t.Errorf("bob's cancel answered %d", code)
		}
	}
	if alice5.Err() != nil || aliceListen.Err() != nil {
		t.Fatal("bob's notifications/cancelled stopped alice's requests")
	}
	if bob5.Err() == nil {
		t.Error("bob's own request 5 was not stopped")
	}
	post("alice", "2026-07-28", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": 5 }}`)
	if alice5.Err() == nil || aliceListen.Err() != nil {
		t.Errorf("alice's cancel of 5: 5 stopped %v, listen:0 stopped %v", alice5.Err() != nil, aliceListen.Err() != nil)
	}
	if len(passed) != 0 {
		t.Errorf("cancels reached mcp-go: %q", passed)
	}
	for _, tc := range []struct{ version, body string }{
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`}, // a 2025 session's: mcp-go keys it by session
		{"2026-07-28", `not json`},
	} {
		passed = nil
		post("alice", tc.version, tc.body)
		if len(passed) != 1 || passed[0] != tc.body {
			t.Errorf("%s %s reached mcp-go as %q", tc.version, tc.body, passed)
		}
	}
}

// BenchmarkModernCancelWrap measures what the cancel wrapper adds to a
// 2026-07-28 POST that is not a cancel: reading the body once more and
// decoding its head, for a tools/call of 1 KiB and of 1 MiB. Run it with
//
//	go test -tags '...' -trimpath -run '^$' -bench BenchmarkModernCancelWrap ./server
func BenchmarkModernCancelWrap(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			body := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"content":%q}}}`, strings.Repeat("x", size)))
			h := newModernCancels().wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
				r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}

package mcpgoadapt

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestExactIDsAliasTokensCancellationsAndBatches checks what pings cannot:
// progress tokens come back in notifications, a cancellation names the
// alias, batches are aliased member by member, and answered ids are dropped.
func TestExactIDsAliasTokensCancellationsAndBatches(t *testing.T) {
	x := newExactIDs(slog.New(slog.DiscardHandler), nil)
	in, _ := x.rewrite("s1", []byte(`{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1e3}}}`))
	alias := member(in, "id")
	token := member(in, "params", "_meta", "progressToken")
	if !strings.HasPrefix(string(alias), `"wink-`) || !strings.HasPrefix(string(token), `"wink-`) {
		t.Fatalf("not aliased: %s", in)
	}
	cancel, _ := x.rewrite("s1", []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":18446744073709551616}}`))
	if got := member(cancel, "params", "requestId"); string(got) != string(alias) {
		t.Errorf("the cancellation names %s, want the alias %s", got, alias)
	}
	other, _ := x.rewrite("s2", []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":18446744073709551616}}`))
	if got := member(other, "params", "requestId"); string(got) != "18446744073709551616" {
		t.Errorf("another session's cancellation names %s", got)
	}
	progress := `data: {"method":"notifications/progress","params":{"progressToken":` + string(token) + `}}`
	for range 2 {
		if got := string(x.restore([]byte(progress))); !strings.Contains(got, `"progressToken":1e3}`) {
			t.Errorf("progress: %s", got)
		}
	}
	answer := `{"jsonrpc":"2.0","id":` + string(alias) + `,"result":{}}`
	if got := string(x.restore([]byte(answer))); got != `{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}` {
		t.Errorf("answer: %s", got)
	}
	if got := string(x.restore([]byte(answer))); got != answer {
		t.Errorf("an answered id's alias is still held: %s", got)
	}
	batch, _ := x.rewrite("s1", []byte(`[{"jsonrpc":"2.0","id":1.50,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`))
	var members []json.RawMessage
	if err := json.Unmarshal(batch, &members); err != nil || len(members) != 2 ||
		!strings.HasPrefix(string(member(members[0], "id")), `"wink-`) || string(member(members[1], "id")) != "2" {
		t.Errorf("batch: %s", batch)
	}
	if got := string(x.restore([]byte(`"wink-unknown-1" and a plain body`))); got != `"wink-unknown-1" and a plain body` {
		t.Errorf("a body without our aliases changed: %s", got)
	}
}

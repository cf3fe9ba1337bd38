package engine

import (
	"strings"
	"testing"
	"time"
)

func TestHandleRecordCheck(t *testing.T) {
	good := HandleRecord{Digest: HandleDigest("wsh_x"), Principal: "p", Workspace: "w", Used: time.Unix(1, 0)}
	if err := good.Check(); err != nil {
		t.Fatalf("a good record: %v", err)
	}
	if len(good.Digest) != 64 || strings.Contains(good.Digest, "wsh_") {
		t.Errorf("digest %q: want 64 hex digits, never the handle", good.Digest)
	}
	noPrincipal := good
	noPrincipal.Principal = ""
	if err := noPrincipal.Check(); err != nil {
		t.Errorf("a server without tokens records no principal: %v", err)
	}
	for name, bad := range map[string]func(*HandleRecord){
		"the handle as digest": func(r *HandleRecord) { r.Digest = "wsh_x" },
		"upper-case digest":    func(r *HandleRecord) { r.Digest = strings.ToUpper(r.Digest) },
		"short digest":         func(r *HandleRecord) { r.Digest = r.Digest[:63] },
		"no workspace":         func(r *HandleRecord) { r.Workspace = "" },
		"no last use":          func(r *HandleRecord) { r.Used = time.Time{} },
	} {
		r := good
		bad(&r)
		if err := r.Check(); err == nil || !strings.HasPrefix(err.Error(), "handle record: ") {
			t.Errorf("%s: %v; want refused", name, err)
		}
	}
}

func TestHandleRecordExpired(t *testing.T) {
	r := HandleRecord{Used: time.Unix(1000, 0)}
	for _, tc := range []struct {
		after, idle time.Duration
		want        bool
	}{
		{time.Minute - time.Nanosecond, time.Minute, false},
		{time.Minute, time.Minute, true},
		{24 * time.Hour, 0, false}, // no idle timeout: never
	} {
		if got := r.Expired(r.Used.Add(tc.after), tc.idle); got != tc.want {
			t.Errorf("after %s with idle %s: %v, want %v", tc.after, tc.idle, got, tc.want)
		}
	}
}

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/engine"
)

func TestSessionHashAndNames(t *testing.T) {
	a, b := []byte("secret-a"), []byte("secret-b")
	if sessionHash(a, "stdio") == sessionHash(b, "stdio") {
		t.Error("two instances give the stdio session the same hash")
	}
	if first, again := sessionHash(a, "x"), sessionHash(a, "x"); first != again {
		t.Error("hash is not deterministic")
	}
	if sessionHash(a, "x") == sessionHash(a, "y") {
		t.Error("two sessions share a hash")
	}
	id := "a3f1c2d4-session-id"
	name := containerName("wink", sessionHash(a, id))
	if strings.Contains(name, id) || strings.Contains(name, "session") || len(name) != len("wink-")+sessionHashLen {
		t.Errorf("container name %q leaks the session id or has the wrong shape", name)
	}
}

func TestIsOrphan(t *testing.T) {
	cache := t.TempDir()
	self, err := newInstance(cache, false)
	if err != nil {
		t.Fatal(err)
	}
	defer self.release(true)
	live, err := newInstance(cache, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.release(true)
	dead, err := newInstance(cache, false)
	if err != nil {
		t.Fatal(err)
	}
	// A killed process leaves its lock file behind, unlocked.
	dead.lock.Close()

	labels := func(inst *instance, mutate func(map[string]string)) map[string]string {
		l := ownerLabels(inst, "0123456789abcdef")
		if mutate != nil {
			mutate(l)
		}
		return l
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{name: "dead instance", labels: labels(dead, nil), want: true},
		{name: "dead instance whose lock file is gone", labels: labels(dead, func(l map[string]string) { l[LabelLock] = filepath.Join(cache, "gone", "lock") }), want: true},
		{name: "live instance", labels: labels(live, nil), want: false},
		{name: "this instance", labels: labels(self, nil), want: false},
		{name: "another host", labels: labels(dead, func(l map[string]string) { l[LabelHost] = "elsewhere" }), want: false},
		{name: "not ours", labels: labels(dead, func(l map[string]string) { delete(l, LabelManaged) }), want: false},
		{name: "relative lock path", labels: labels(dead, func(l map[string]string) { l[LabelLock] = "lock" }), want: false},
		{name: "unclean lock path", labels: labels(dead, func(l map[string]string) { l[LabelLock] = cache + "/../lock" }), want: false},
		{name: "no instance", labels: labels(dead, func(l map[string]string) { delete(l, LabelInstance) }), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isOrphan(tt.labels, self, probeLock); got != tt.want {
				t.Errorf("isOrphan = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSweepRemovesOnlyDeadInstancesContainersAndDirs(t *testing.T) {
	m, eng, logs := newTestManager(t, nil)
	live, err := newInstance(m.cfg.CacheDir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.release(true)
	dead, err := newInstance(m.cfg.CacheDir, false)
	if err != nil {
		t.Fatal(err)
	}
	dead.lock.Close()
	kept, err := newInstance(m.cfg.CacheDir, true)
	if err != nil {
		t.Fatal(err)
	}
	kept.lock.Close()
	for _, c := range []struct {
		name string
		inst *instance
	}{{"wink-dead", dead}, {"wink-live", live}, {"wink-mine", m.inst}} {
		eng.containers[c.name] = &fakeContainer{}
		eng.listed = append(eng.listed, engine.Listed{Name: c.name, Labels: ownerLabels(c.inst, "0123456789abcdef")})
	}
	removed, err := m.SweepOrphans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 1 || eng.containers["wink-dead"] != nil || eng.containers["wink-live"] == nil || eng.containers["wink-mine"] == nil {
		t.Errorf("removed %d; remaining %v; want only wink-dead removed", removed, eng.containers)
	}
	for dir, want := range map[string]bool{dead.dir: false, live.dir: true, kept.dir: true, m.inst.dir: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("directory %s exists = %v, want %v", dir, err == nil, want)
		}
	}
	if got := logs.events(); len(got) != 1 || got[0] != EventOrphanRemoved {
		t.Errorf("events = %v, want one %s", got, EventOrphanRemoved)
	}
}

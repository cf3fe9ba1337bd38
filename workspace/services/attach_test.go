package services

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/wire"
)

// recorder records a Room's container starts and port forwards.
type recorder struct {
	mu       sync.Mutex
	made     []string
	forwards []int
	broken   string // a service whose container cannot be made
}

func (rc *recorder) room(t *testing.T, decls []Declared) *Room {
	echo := newEchoContainer(t)
	return New(Deps{
		Make: func(_ context.Context, spec Spec) (Container, error) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if spec.Name == rc.broken {
				return nil, errors.New("no image")
			}
			rc.made = append(rc.made, spec.Name)
			return echo, nil
		},
		Call: func(_ context.Context, op string, args, _ any) error {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if op == wire.OpServiceForward {
				rc.forwards = append(rc.forwards, args.(wire.ServiceForwardArgs).Port)
			}
			return nil
		},
		Declared: func() []Declared { return decls },
		Log:      slog.New(slog.DiscardHandler), Session: func() string { return "s" },
	})
}

func declared(name string, port int, autostart bool, deps ...string) Declared {
	return Declared{Spec: Spec{Name: name, Profile: "p", Command: []string{"x"}, Ports: []int{port},
		Ready: Ready{Port: port, Timeout: 5 * time.Second}}, Autostart: autostart, DependsOn: deps}
}

// The first Attach starts the autostart services and their dependencies,
// dependencies first; one whose dependency failed is not started and
// List says why; a later Attach starts nothing, and one after Detach
// listens again on the running services' ports.
func TestAttachStartsDeclaredServicesInOrder(t *testing.T) {
	rc := &recorder{broken: "bad"}
	room := rc.room(t, []Declared{
		declared("web", 2003, true, "api"),
		declared("api", 2002, false, "db"),
		declared("db", 2001, false),
		declared("manual", 2004, false),
		declared("bad", 2005, false),
		declared("after-bad", 2006, true, "bad"),
	})
	ctx := context.Background()
	if err := room.Attach(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"db", "api", "web"}; !slices.Equal(rc.made, want) {
		t.Errorf("started %v; want %v", rc.made, want)
	}
	infos := map[string]Info{}
	for _, in := range room.List(ctx) {
		infos[in.Name] = in
	}
	if in := infos["after-bad"]; !in.Declared || !in.Autostart || !strings.Contains(in.Problem, "depends on bad, which did not start") {
		t.Errorf("after-bad: %+v", in)
	}
	if in := infos["bad"]; !strings.Contains(in.Problem, "no image") {
		t.Errorf("bad: %+v", in)
	}
	if in := infos["manual"]; !in.Declared || in.Autostart || in.Problem != "" {
		t.Errorf("manual: %+v", in)
	}
	rc.forwards = nil
	if err := room.Attach(ctx); err != nil || len(rc.forwards) != 0 {
		t.Errorf("a second Attach on the same container: %v, forwards %v", err, rc.forwards)
	}
	room.Detach()
	if err := room.Attach(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rc.forwards)
	if want := []int{2001, 2002, 2003}; !slices.Equal(rc.forwards, want) || len(rc.made) != 3 {
		t.Errorf("after Detach: forwards %v (want %v), made %v (want no more)", rc.forwards, want, rc.made)
	}
}

// Start by name starts the declared service's dependencies that do not
// run, first.
func TestStartByNameStartsItsDependencies(t *testing.T) {
	rc := &recorder{}
	room := rc.room(t, []Declared{declared("web", 2003, false, "db"), declared("db", 2001, false)})
	if _, err := room.Start(context.Background(), Spec{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"db", "web"}; !slices.Equal(rc.made, want) {
		t.Errorf("started %v; want %v", rc.made, want)
	}
}

// Order refuses an unknown dependency and a cycle, naming the field.
func TestOrderRefusesUnknownAndCycles(t *testing.T) {
	if _, err := Order([]Declared{declared("a", 2000, false, "b")}); err == nil || err.Error() != `services.a.depends_on[0]: "b" is no service this profile declares` {
		t.Errorf("unknown: %v", err)
	}
	if _, err := Order([]Declared{declared("a", 2000, false, "b"), declared("b", 2001, false, "a")}); err == nil || !strings.Contains(err.Error(), "a cycle (a -> b -> a)") {
		t.Errorf("cycle: %v", err)
	}
}

// Calls racing on a new container attach it once: the autostart services
// start once, and every call returns only after they are ready.
func TestRacingAttachesStartOnce(t *testing.T) {
	rc := &recorder{}
	room := rc.room(t, []Declared{declared("db", 2001, true)})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := room.Attach(context.Background()); err != nil {
				t.Error(err)
			}
			if _, err := room.get("db"); err != nil {
				t.Errorf("an Attach returned before the autostart service ran: %v", err)
			}
		})
	}
	wg.Wait()
	if len(rc.made) != 1 {
		t.Errorf("made %v; want db once", rc.made)
	}
}

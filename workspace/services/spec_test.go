package services

import (
	"strings"
	"testing"
	"time"
)

// TestSpecCheckNamesTheField: every bad field is refused with its name and
// the limit, and a good spec gets the default timeout.
func TestSpecCheckNamesTheField(t *testing.T) {
	good := func() Spec {
		return Spec{Name: "db", Profile: "pg", Command: []string{"postgres"}, Ports: []int{5432}, Ready: Ready{Port: 5432}}
	}
	many := make([]string, MaxArgs+1)
	for i := range many {
		many[i] = "x"
	}
	env := map[string]string{}
	for i := range MaxEnv + 1 {
		env["V"+strings.Repeat("A", i)] = "1"
	}
	for _, c := range []struct {
		change func(*Spec)
		want   string
	}{
		{func(s *Spec) { s.Name = "" }, "name: \"\" is not a service name"},
		{func(s *Spec) { s.Name = "../db" }, "name: \"../db\""},
		{func(s *Spec) { s.Name = strings.Repeat("a", 32) }, "1 to 31 lowercase"},
		{func(s *Spec) { s.Profile = " " }, "profile: is required"},
		{func(s *Spec) { s.Command = nil }, "command: is required"},
		{func(s *Spec) { s.Command = many }, "command: has 65 arguments; at most 64"},
		{func(s *Spec) { s.Env = env }, "env: has 33 variables; at most 32"},
		{func(s *Spec) { s.Env = map[string]string{"A=B": "1"} }, "env: \"A=B\" is not a variable name"},
		{func(s *Spec) { s.Ports = nil }, "ports: has 0 ports; a service serves 1 to 4"},
		{func(s *Spec) { s.Ports = []int{5432, 1, 2, 3, 4} }, "ports: has 5 ports"},
		{func(s *Spec) { s.Ports = []int{80} }, "ports[0]: 80 is outside 1024-65535"},
		{func(s *Spec) { s.Ports = []int{5432, 70000} }, "ports[1]: 70000 is outside"},
		{func(s *Spec) { s.Ports = []int{5432, 3128} }, "ports[1]: 3128 is the workspace's egress proxy port"},
		{func(s *Spec) { s.Ports = []int{5432, 5432} }, "ports[1]: 5432 is named twice"},
		{func(s *Spec) { s.Ready = Ready{} }, "ready: needs port"},
		{func(s *Spec) { s.Ready = Ready{Port: 5432, Command: []string{"true"}} }, "ready: takes port or command, not both"},
		{func(s *Spec) { s.Ready = Ready{Port: 6000} }, "ready.port: 6000 is not one of the service's ports [5432]"},
		{func(s *Spec) { s.Ready = Ready{Command: []string{""}} }, "ready.command: the program is empty"},
		{func(s *Spec) { s.Ready.Timeout = 500 * time.Millisecond }, "ready.timeout_seconds: 500ms is outside 1 s to 5m0s"},
		{func(s *Spec) { s.Ready.Timeout = time.Hour }, "ready.timeout_seconds: 1h0m0s is outside"},
	} {
		s := good()
		c.change(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", s, err, c.want)
		}
	}
	s := good()
	if err := s.Check(); err != nil || s.Ready.Timeout != DefaultReadyTimeout {
		t.Errorf("a good spec: %v, timeout %s", err, s.Ready.Timeout)
	}
}

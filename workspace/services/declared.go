package services

import (
	"fmt"
	"slices"
	"strings"
)

// Declared is a service a profile declares: the model starts it by its
// name alone, and one marked Autostart starts with the workspace.
type Declared struct {
	Spec
	// Autostart starts it when the workspace's container first starts
	// (Room.Attach), after the services it depends on.
	Autostart bool
	// DependsOn names declared services of the same profile that start,
	// and become ready, before this one.
	DependsOn []string
}

// Order returns decls with every service after those it depends on (in
// their declared order otherwise), or what is wrong: a dependency that
// names no declared service, or a cycle.
func Order(decls []Declared) ([]Declared, error) {
	byName := make(map[string]Declared, len(decls))
	for _, d := range decls {
		byName[d.Name] = d
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var out []Declared
	var visit func(d Declared, path []string) error
	visit = func(d Declared, path []string) error {
		switch state[d.Name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("services.%s.depends_on: a cycle (%s)", d.Name, strings.Join(append(path, d.Name), " -> "))
		}
		state[d.Name] = visiting
		for i, dep := range d.DependsOn {
			next, ok := byName[dep]
			if !ok {
				return fmt.Errorf("services.%s.depends_on[%d]: %q is no service this profile declares", d.Name, i, dep)
			}
			if err := visit(next, append(path, d.Name)); err != nil {
				return err
			}
		}
		state[d.Name] = done
		out = append(out, d)
		return nil
	}
	for _, d := range decls {
		if err := visit(d, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// needed returns, in start order, name's declared service and every one
// it depends on, directly or not.
func needed(ordered []Declared, name string) []Declared {
	want := map[string]bool{name: true}
	for i := len(ordered) - 1; i >= 0; i-- { // dependents come after their dependencies
		if want[ordered[i].Name] {
			for _, dep := range ordered[i].DependsOn {
				want[dep] = true
			}
		}
	}
	var out []Declared
	for _, d := range ordered {
		if want[d.Name] {
			out = append(out, d)
		}
	}
	return out
}

// autostarting returns, in start order, the declared services marked
// Autostart and those they depend on.
func autostarting(ordered []Declared) []Declared {
	var out []Declared
	for _, d := range ordered {
		if d.Autostart {
			for _, n := range needed(ordered, d.Name) {
				if !slices.ContainsFunc(out, func(o Declared) bool { return o.Name == n.Name }) {
					out = append(out, n)
				}
			}
		}
	}
	return out // each needed list has a service's dependencies first, so the merge does too
}

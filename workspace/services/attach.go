package services

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wink-mcp/wink-mcp/wire"
)

// attachingKey marks the context of a Room's own calls while it attaches
// the workspace's container, which Attach lets through.
type attachingKey struct{}

// Attach readies the workspace's current container for its services,
// once per container: the ports of the services that run (those that
// outlived an earlier container) listen again on its loopback, and, for
// the workspace's first container, the declared services marked
// autostart start in depends_on order, each waited on within its
// readiness timeout. A service that fails is reported by List (and the
// log), never waited on past its timeout, and does not fail the call.
// Concurrent calls wait for the first; the Room's own calls pass.
func (r *Room) Attach(ctx context.Context) error {
	if ctx.Value(attachingKey{}) != nil {
		return nil
	}
	r.mu.Lock()
	if r.closed || r.attached {
		r.mu.Unlock()
		return nil
	}
	if wait := r.attaching; wait != nil {
		r.mu.Unlock()
		select {
		case <-wait:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan struct{})
	r.attaching = done
	gen, first := r.gen, !r.autostarted
	r.autostarted = true
	var running []*service
	for _, svc := range r.byName {
		if svc != nil {
			running = append(running, svc)
		}
	}
	r.mu.Unlock()

	work := context.WithValue(context.WithoutCancel(ctx), attachingKey{}, true)
	for _, svc := range running {
		r.reforward(work, svc)
	}
	if first {
		r.autostart(work)
	}
	r.mu.Lock()
	r.attached = r.gen == gen // a Detach meanwhile leaves the next container to attach
	r.attaching = nil
	r.mu.Unlock()
	close(done)
	return nil
}

// Detach says the workspace's container went, and with it the listeners
// on the services' ports: the services go on running, and the next
// container's Attach listens on their ports again.
func (r *Room) Detach() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.attached = false
}

// reforward listens on svc's ports in the workspace's new container.
func (r *Room) reforward(ctx context.Context, svc *service) {
	for _, p := range svc.spec.Ports {
		var res wire.ServiceForwardResult
		if err := r.d.Call(ctx, wire.OpServiceForward, wire.ServiceForwardArgs{Port: p, Service: svc.spec.Name, ServicePort: p}, &res); err != nil {
			r.d.Log.Warn("listening again on a service's port in the workspace's new container", "event", "service_reattach_failed",
				"session", r.d.Session(), "service", svc.spec.Name, "port", p, "err", err)
			return
		}
	}
	r.d.Log.Info("service reached from the workspace's new container", "event", "service_reattached", "session", r.d.Session(),
		"service", svc.spec.Name, "container", svc.c.Name(), "ports", svc.spec.Ports)
}

// autostart starts the declared services marked autostart, dependencies
// first; one whose dependency failed is not started. Failures are kept
// for List.
func (r *Room) autostart(ctx context.Context) {
	ordered, err := Order(r.declaredSpecs())
	if err != nil { // profiles are checked when read; kept for a caller that did not
		r.d.Log.Warn("declared services not started", "event", "service_autostart_failed", "session", r.d.Session(), "err", err)
		return
	}
	for _, d := range autostarting(ordered) {
		if err := r.startDeclared(ctx, d); err != nil {
			r.d.Log.Warn("a declared service did not start with the workspace", "event", "service_autostart_failed",
				"session", r.d.Session(), "service", d.Name, "err", err)
		}
	}
}

// startDeclared starts the declared service d unless it runs, once the
// services it depends on run; a failure is kept for List.
func (r *Room) startDeclared(ctx context.Context, d Declared) error {
	r.mu.Lock()
	_, on := r.byName[d.Name]
	var failedDeps []string
	for _, dep := range d.DependsOn {
		if r.byName[dep] == nil {
			failedDeps = append(failedDeps, dep)
		}
	}
	r.mu.Unlock()
	if on {
		return nil
	}
	var err error
	if len(failedDeps) > 0 {
		err = fmt.Errorf("not started: it depends on %s, which did not start", strings.Join(failedDeps, ", "))
	} else {
		_, err = r.startSpec(ctx, d.Spec)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && !errors.Is(err, ErrClosed) {
		r.failed[d.Name] = err.Error()
	} else {
		delete(r.failed, d.Name)
	}
	return err
}

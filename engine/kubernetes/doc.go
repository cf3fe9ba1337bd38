// Package kubernetes is the Kubernetes engine: it implements engine.Engine
// with client-go, making each workspace a Pod in one namespace. A Pod has
// the hardening of the Podman engine's container in Kubernetes terms (see
// podFor), is read back once admitted and refused when an admission step
// weakened any of it (checkAdmitted), and runs the wink-mcp agent as its
// init, copied by an init container from an image that holds only the
// static binary. The channel to the agent is one long-lived stream of the
// Pod's exec subresource (WebSocket, SPDY where the API server offers no
// WebSocket), never an exec per call. A deny-all NetworkPolicy cuts off
// each Pod's network (ensurePolicy), and a probe Pod tells whether the
// cluster enforces it (Engine.NetworkPolicy); where it does not, workspaces
// are refused unless the operator allows it (AllowFlag).
//
// What has no Kubernetes meaning yet (images committed from a container
// for a profile's setup commands, copies of host folders, folder mounts)
// returns an error wrapping ErrNotAvailable that names the feature.
package kubernetes

// Package podman is the Podman engine: it implements engine.Engine
// against the Podman service's REST API through Podman's Go bindings
// (which need the Makefile's build tags to build without cgo), turns an
// engine.Spec into the hardened create request, checks that the container
// Podman made carries every setting asked for, and builds the agent image.
package podman

//go:build containers_image_openpgp

// Package podman is the Podman engine: it implements engine.Engine
// against the Podman service's REST API through Podman's Go bindings,
// turns an engine.Spec into the hardened create request, checks that the
// container Podman made carries every setting asked for, and builds the
// agent image.
//
// Every file of this package needs the build tag containers_image_openpgp,
// one of the Makefile's four: without it the bindings' image signatures
// need gpgme and cgo, and nothing here would build. The tag leaves this
// package out of a build without it, so that `go vet ./...` and the tests
// of the engine-neutral packages work with no tags at all; the command
// then has no engine and says how to build one in (cmd/wink-mcp).
package podman

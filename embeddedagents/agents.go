// Package embeddedagents carries static Linux builds of wink-mcp, by architecture,
// for a server whose own binary cannot be the containers' agent: one built
// for macOS or Windows, or for another architecture than the Podman
// host's. `make dist` builds them into this directory and embeds them (the
// build tag embedagents); other builds carry none.
package embeddedagents

// For returns the agent for linux/arch ("amd64", "arm64"), or nil when
// this build carries none.
func For(arch string) []byte { return agent(arch) }

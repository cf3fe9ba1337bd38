//go:build !embedagents

package embeddedagents

// agent returns nil: this build carries no agents (see `make dist`).
func agent(string) []byte { return nil }

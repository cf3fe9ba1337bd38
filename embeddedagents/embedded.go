//go:build embedagents

package embeddedagents

import "embed"

// files holds the agents `make cross` or `make dist` put here, named
// wink-mcp-linux-<arch>.
//
//go:embed wink-mcp-linux-*
var files embed.FS

func agent(arch string) []byte {
	b, err := files.ReadFile("wink-mcp-linux-" + arch)
	if err != nil {
		return nil
	}
	return b
}

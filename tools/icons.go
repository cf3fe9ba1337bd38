package tools

import (
	"encoding/base64"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Icons are small SVGs (24x24, stroked with currentColor so clients can
// tint them) sent as data URIs: no request leaves the client to show them.
const (
	svgFile     = `<path d="M6 2h8l4 4v16H6z"/><path d="M14 2v4h4"/>`
	svgFolder   = `<path d="M3 6h6l2 2h10v12H3z"/>`
	svgSearch   = `<circle cx="10" cy="10" r="6"/><path d="M15 15l6 6"/>`
	svgTerminal = `<rect x="2" y="4" width="20" height="16" rx="2"/><path d="M6 9l3 3-3 3M12 15h6"/>`
	svgPython   = `<path d="M12 3c-4 0-4 2-4 3v2h5v1H6c-2 0-3 2-3 4s1 4 3 4h2v-3c0-2 1-3 3-3h5c1 0 2-1 2-2V6c0-2-2-3-6-3z"/><path d="M12 21c4 0 4-2 4-3v-2h-5v-1h7c2 0 3-2 3-4"/>`
	svgDiff     = `<path d="M6 3v12M3 6h6M15 18h6"/><circle cx="18" cy="8" r="3"/>`
	svgPort     = `<circle cx="12" cy="12" r="9"/><path d="M3 12h18M12 3c3 3 3 15 0 18M12 3c-3 3-3 15 0 18"/>`
	svgSave     = `<path d="M4 4h13l3 3v13H4z"/><path d="M8 4v5h8V4M8 20v-6h8v6"/>`
	svgHandoff  = `<path d="M4 12h12M12 6l6 6-6 6"/><path d="M20 4v16"/>`
	svgFork     = `<circle cx="6" cy="5" r="2"/><circle cx="18" cy="5" r="2"/><circle cx="12" cy="19" r="2"/><path d="M6 7v2a3 3 0 0 0 3 3h6a3 3 0 0 0 3-3V7M12 12v5"/>`
	svgDatabase = `<ellipse cx="12" cy="5" rx="8" ry="3"/><path d="M4 5v14c0 2 4 3 8 3s8-1 8-3V5M4 12c0 2 4 3 8 3s8-1 8-3"/>`
	svgDigest   = `<path d="M5 3h14v18H5z"/><path d="M8 8h8M8 12h8M8 16h5"/>`
	svgProfile  = `<path d="M4 7h16M4 12h16M4 17h16"/><circle cx="8" cy="7" r="2"/><circle cx="16" cy="12" r="2"/><circle cx="10" cy="17" r="2"/>`
	// svgServer is wink-mcp's own icon: a box (the container) with an eye.
	svgServer = `<path d="M3 7l9-4 9 4v10l-9 4-9-4z"/><path d="M7 12c2-3 8-3 10 0-2 3-8 3-10 0z"/><circle cx="12" cy="12" r="1"/>`
)

// toolIcons gives each tool its icon.
var toolIcons = map[string]string{
	"ls": svgFolder, "read_file": svgFile, "write_file": svgFile, "edit_file": svgFile, "glob": svgSearch,
	"grep": svgSearch, "rm": svgFile, "podman_shell": svgTerminal, "job": svgTerminal, "evaluate_python": svgPython,
	"workspace_changes": svgDiff, "workspace_diff": svgDiff, "workspace_port": svgPort, "workspace_egress": svgPort, "workspace_checkpoint": svgSave,
	"workspace_checkpoints": svgSave, "workspace_restore": svgSave, "workspace_checkpoint_diff": svgDiff,
	"workspace_checkpoint_delete": svgSave, "workspace_handoff": svgHandoff, "workspace_attach": svgHandoff,
	"workspace_fork": svgFork, "workspace_digest": svgDigest,
	"workspace_profile": svgProfile, "workspace_info": svgServer, "workspace_service": svgDatabase,
}

// icon makes the data URI of an SVG body.
func icon(body string) mcp.Icon {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">` +
		strings.TrimSpace(body) + `</svg>`
	return mcp.Icon{Src: "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(svg)), MIMEType: "image/svg+xml", Sizes: []string{"any"}}
}

// ServerIcon is wink-mcp's icon, for its implementation info.
func ServerIcon() mcp.Icon { return icon(svgServer) }

// toolIcon is the icon of the tool called name.
func toolIcon(name string) []mcp.Icon {
	body, ok := toolIcons[name]
	if !ok {
		return nil
	}
	return []mcp.Icon{icon(body)}
}

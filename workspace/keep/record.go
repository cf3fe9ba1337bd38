package keep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WorkspaceOwner is who owns a kept workspace.
type WorkspaceOwner struct {
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Instance string    `json:"instance"`
	Session  string    `json:"session"`
	Since    time.Time `json:"since"`
}

// WorkspaceRecord describes a kept workspace.
type WorkspaceRecord struct {
	Name     string    `json:"name"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// Principal is the digest of the bearer token of the client that made
	// it ("" for local clients); only that principal may open it.
	Principal string `json:"principal,omitempty"`
	// HandoffUntil, while in the future, reserves it for the holder of
	// the handle it was handed over with: no name opens it.
	HandoffUntil time.Time `json:"handoff_until,omitzero"`
	// EgressBytes is what its sessions' egress proxies have carried in
	// all, which the next session that opens it goes on counting from
	// (--egress-max-bytes); kept up to date while a session has it.
	EgressBytes int64 `json:"egress_bytes,omitempty"`
	// FromHandoff says a stdio session's handoff made it of the session's
	// own workspace: it is deleted once nothing holds it (see
	// workspace/handoff_disk.go), unless someone opens it by name, which
	// keeps it.
	FromHandoff bool `json:"from_handoff,omitempty"`
}

// DescribeOwner names the owner of the workspace at root for a message.
func DescribeOwner(root string) string {
	var o WorkspaceOwner
	data, err := os.ReadFile(filepath.Join(root, OwnerFile))
	if err != nil || json.Unmarshal(data, &o) != nil {
		return "another wink-mcp process"
	}
	return fmt.Sprintf("wink-mcp process %d on %s (session %s, since %s)", o.PID, o.Host, o.Session, o.Since.Format(time.RFC3339))
}

// ReadRecord reads the record of the kept workspace at root.
func ReadRecord(root string) (WorkspaceRecord, error) {
	var rec WorkspaceRecord
	data, err := os.ReadFile(filepath.Join(root, RecordFile))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("reading %s: %w", filepath.Join(root, RecordFile), err)
	}
	return rec, nil
}

// ReadJSON reads the JSON file at path into v.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// String renders who owns a kept workspace.
func (o *WorkspaceOwner) String() string {
	if o.PID == 0 {
		return "in use"
	}
	return fmt.Sprintf("in use by process %d on %s, session %s, since %s", o.PID, o.Host, o.Session, o.Since.Format(time.RFC3339))
}

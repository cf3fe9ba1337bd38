package tools

import (
	"testing"

	"github.com/wink-mcp/wink-mcp/wire"
)

func TestOOMNote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		oom  *wire.OOM
		want string
	}{
		{"nothing killed", nil, ""},
		{"a count of zero", &wire.OOM{}, ""},
		{"the command itself", &wire.OOM{Kills: 1, Killed: true, LimitBytes: 1 << 30}, "killed by the workspace's memory limit of 1 GiB (out of memory)"},
		{"one of its processes", &wire.OOM{Kills: 1, LimitBytes: 512 << 20}, "the workspace's memory limit of 512 MiB killed 1 process while it ran (out of memory)"},
		{"several", &wire.OOM{Kills: 3, LimitBytes: 1536 << 20}, "the workspace's memory limit of 1536 MiB killed 3 processes while it ran (out of memory)"},
		{"an odd limit", &wire.OOM{Kills: 1, Killed: true, LimitBytes: 1000}, "killed by the workspace's memory limit of 1000 bytes (out of memory)"},
		{"no limit known", &wire.OOM{Kills: 1, Killed: true}, "killed by the workspace's memory limit (out of memory)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := oomNote(tt.oom); got != tt.want {
				t.Errorf("oomNote = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShellTextNamesTheMemoryLimit(t *testing.T) {
	t.Parallel()
	r := ShellResult{Action: ActionExec, ExitCode: 137, DurationMS: 12, Cwd: "/workspace", OutOfMemory: oomNote(&wire.OOM{Kills: 1, Killed: true, LimitBytes: 1 << 30})}
	if got, want := r.Text(), "exit 137 in 12 ms (cwd /workspace): killed by the workspace's memory limit of 1 GiB (out of memory)"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

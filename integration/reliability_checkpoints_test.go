package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/tools"
)

// treeScript makes 10 directories of 150 files of 16 KiB each (24 MB),
// the same bytes every time, so that a checkpoint or a restore of it takes
// long enough to be killed in the middle.
const treeScript = `set -e
for d in 0 1 2 3 4 5 6 7 8 9; do
  mkdir -p d$d
  i=0; while [ $i -lt 150 ]; do yes "d$d-f$i" | head -c 16384 > d$d/f$i; i=$((i+1)); done
done`

// changeScript turns treeScript's tree into another, the same one from
// either: three directories go, two come, one is rewritten.
const changeScript = `set -e
rm -rf d0 d1 d2
mkdir -p n0 n1
for d in n0 n1; do i=0; while [ $i -lt 150 ]; do yes "$d-$i" | head -c 16384 > $d/f$i; i=$((i+1)); done; done
for f in d5/*; do printf 'rewritten %s\n' "$f" > "$f"; done`

// TestReliabilityCheckpoints tries the checkpoint promises the way a crash
// and a crowd would: a server killed with SIGKILL during checkpoints and
// restores, a workspace at its disk limit, restores racing writes.
func TestReliabilityCheckpoints(t *testing.T) {
	t.Run("kill -9 during a restore", func(t *testing.T) {
		cache := t.TempDir()
		args := []string{"--workspace", "crash-restore"}
		p := start(t, startOptions{cache: cache, args: args})
		if res := p.run("sh", "-c", treeScript); res.ExitCode != 0 {
			t.Fatal(res.Stderr)
		}
		old := p.listingDigest()
		decodeStructured(t, p.call("workspace_checkpoint", map[string]any{"message": "old"}), &tools.WorkspaceCheckpointResult{})
		p.run("sh", "-c", changeScript)
		changed := p.listingDigest()
		// How long a whole restore takes here, to kill within it.
		start1 := time.Now()
		p.call("workspace_restore", map[string]any{"checkpoint": "c1"})
		whole := time.Since(start1)
		const rounds = 6
		broken, mixed, finished, restored := 0, 0, 0, 0
		for round := range rounds {
			if res := p.run("sh", "-c", changeScript); res.ExitCode != 0 {
				t.Fatal(res.Stderr)
			}
			p = p.killDuring(toolRequest("workspace_restore", map[string]any{"checkpoint": "c1"}), killAt(round, rounds, whole), startOptions{cache: cache, args: args})
			switch got := p.listingDigest(); got {
			case old:
				restored++
			case changed:
			default:
				mixed++
				t.Errorf("round %d: after the restart the workspace is neither the old state (%s) nor the new (%s): %s", round, old, changed, got)
			}
			if res := p.call("workspace_checkpoints", nil); res.IsError {
				broken++
				t.Errorf("round %d: the store cannot be read: %s", round, textOf(res))
			}
			if p.logs.find("workspace restore finished", nil) != nil {
				finished++
			}
		}
		if finished == 0 {
			t.Errorf("no kill fell within a restore's journal in %d rounds: the test did not try what it names", rounds)
		}
		recordPromise(promiseFigure{Class: "checkpoints: the server killed with SIGKILL during a restore of 1,500 files, then started again on the workspace", Tried: rounds, Broken: broken + mixed,
			Measured: fmt.Sprintf("killed within the %d ms a restore takes: %d times the workspace was the checkpoint's (%d of them finished by the next server from the journal), %d times the state the restore was to replace; %d mixed, %d unreadable",
				whole.Milliseconds(), restored, finished, rounds-restored-mixed, mixed, broken)})
	})

	t.Run("kill -9 during a checkpoint", func(t *testing.T) {
		cache := t.TempDir()
		args := []string{"--workspace", "crash-checkpoint"}
		p := start(t, startOptions{cache: cache, args: args})
		if res := p.run("sh", "-c", treeScript); res.ExitCode != 0 {
			t.Fatal(res.Stderr)
		}
		start1 := time.Now()
		decodeStructured(t, p.call("workspace_checkpoint", nil), &tools.WorkspaceCheckpointResult{})
		whole := time.Since(start1)
		const rounds = 6
		broken := 0
		for round := range rounds {
			p.run("sh", "-c", fmt.Sprintf("for f in d%d/*; do echo round-%d >> $f; done", round%10, round))
			before := p.listingDigest()
			p = p.killDuring(toolRequest("workspace_checkpoint", map[string]any{"message": fmt.Sprint("round ", round)}), killAt(round, rounds, whole), startOptions{cache: cache, args: args})
			ok := p.listingDigest() == before
			var list tools.WorkspaceCheckpointsResult
			res := p.call("workspace_checkpoints", nil)
			ok = ok && !res.IsError
			decodeStructured(t, res, &list)
			// Every checkpoint listed can be read whole.
			for _, cp := range list.Checkpoints {
				if d := p.call("workspace_checkpoint_diff", map[string]any{"from": cp.ID, "limit": 1}); d.IsError {
					ok = false
					t.Errorf("round %d: checkpoint %s cannot be read: %s", round, cp.ID, textOf(d))
				}
			}
			if res := p.call("workspace_checkpoint", nil); res.IsError {
				ok = false
				t.Errorf("round %d: a new checkpoint failed: %s", round, textOf(res))
			}
			if !ok {
				broken++
			}
		}
		recordPromise(promiseFigure{Class: "checkpoints: the server killed with SIGKILL during a checkpoint of 1,500 files, then started again on the workspace", Tried: rounds, Broken: broken,
			Measured: fmt.Sprintf("killed within the %d ms a checkpoint takes; files untouched, every listed checkpoint readable and a new one taken every time", whole.Milliseconds())})
	})

	t.Run("a checkpoint at the disk limit", func(t *testing.T) {
		p := start(t, startOptions{args: []string{"--disk-limit", "64m"}})
		fill := p.run("sh", "-c", "dd if=/dev/urandom of=fill bs=1M 2>&1; ls -l fill")
		if !strings.Contains(fill.Stdout, "No space left") {
			t.Fatalf("the disk did not fill: %s", fill.Stdout)
		}
		broken := 0
		check := func(what string, ok bool, detail string) {
			if !ok {
				broken++
				t.Errorf("%s: %s", what, detail)
			}
		}
		res := p.call("workspace_checkpoint", map[string]any{"message": "full"})
		check("checkpoint of a full disk", !res.IsError, textOf(res))
		full := p.run("md5sum", "fill").Stdout
		p.run("sh", "-c", "rm fill && echo small > s")
		res = p.call("workspace_checkpoint", nil)
		check("checkpoint after freeing", !res.IsError, textOf(res))
		res = p.call("workspace_restore", map[string]any{"checkpoint": "c1"})
		check("restore of the full state", !res.IsError, textOf(res))
		check("the full state's file", p.run("md5sum", "fill").Stdout == full, "fill differs")
		res = p.call("workspace_restore", map[string]any{"checkpoint": "c2"})
		check("restore of the freed state", !res.IsError, textOf(res))
		check("the freed state's file", p.run("cat", "s").Stdout == "small\n", "s differs")
		recordPromise(promiseFigure{Class: "checkpoints: a workspace filled to its 64 MiB disk limit, checkpointed and restored both ways", Tried: 6, Broken: broken,
			Measured: "the checkpoint store is outside the workspace's disk: a full disk is saved, and a restore removes before it writes"})
	})

	t.Run("restores racing writes and commands", func(t *testing.T) {
		p := start(t, startOptions{transport: "http"})
		p.call("write_file", map[string]any{"file_path": "f.txt", "content": "checkpointed"})
		decodeStructured(t, p.call("workspace_checkpoint", nil), &tools.WorkspaceCheckpointResult{})
		const writes = 60
		var wg sync.WaitGroup
		var mu sync.Mutex
		failed, stopped := 0, 0
		for i := range writes {
			wg.Go(func() {
				res, err := p.client.CallTool(context.Background(), toolRequest("write_file", map[string]any{"file_path": "f.txt", "content": strings.Repeat(fmt.Sprint(i%10), 20_000)}))
				if err != nil || res.IsError {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			})
			if i%15 == 0 {
				wg.Go(func() {
					res, err := p.client.CallTool(context.Background(), toolRequest("podman_shell", map[string]any{"command": []string{"sh", "-c", "while true; do echo cmd >> f.txt; done"}, "timeout_seconds": 60}))
					if err == nil && res.IsError && strings.Contains(textOf(res), "restored to a checkpoint") {
						mu.Lock()
						stopped++
						mu.Unlock()
					}
				})
				wg.Go(func() {
					time.Sleep(50 * time.Millisecond)
					if res, err := p.client.CallTool(context.Background(), toolRequest("workspace_restore", map[string]any{"checkpoint": "c1"})); err != nil || res.IsError {
						t.Errorf("restore: %v %s", err, textOf(res))
					}
				})
			}
		}
		wg.Wait()
		// A command started after the last restore may still be writing.
		p.call("workspace_restore", map[string]any{"checkpoint": "c1"})
		torn := 0
		got := p.run("cat", "f.txt").Stdout
		if got != "checkpointed" {
			torn++
			t.Errorf("after the last restore f.txt = %.40q (%d bytes)", got, len(got))
		}
		if left := p.run("sh", "-c", "ls -A").Stdout; left != "f.txt\n" {
			torn++
			t.Errorf("left in the workspace: %q", left)
		}
		if failed > 0 {
			t.Errorf("%d writes failed", failed)
		}
		recordPromise(promiseFigure{Class: "checkpoints: 60 write_file calls and 4 writing commands racing 5 restores, over HTTP", Tried: writes + 9, Broken: torn + failed,
			Measured: fmt.Sprintf("every write answered success; %d running commands stopped by restores, said so; the file whole and nothing left beside it", stopped)})
	})
}

// killDuring sends req, kills the server with SIGKILL after the delay at,
// and starts a new one with opts (see restartWhileExiting), which it
// returns once a first call has answered: the new server must wait for
// the killed one's locks, not refuse the workspace as owned by it.
func (p *proc) killDuring(req mcp.CallToolRequest, at time.Duration, opts startOptions) *proc {
	p.t.Helper()
	go p.client.CallTool(context.Background(), req)
	time.Sleep(at)
	next, release := p.restartWhileExiting(opts)
	res := next.call("podman_shell", map[string]any{"command": []string{"true"}})
	release()
	if res.IsError {
		p.t.Fatalf("the first call after the restart: %s", textOf(res))
	}
	if next.logs.find(lockWaitLog, nil) == nil {
		p.t.Errorf("the new server did not wait for the killed one's lock: the test did not try what it names")
	}
	return next
}

// killAt is when round of rounds kills an operation that takes whole: the
// rounds spread evenly over it, each moved at random within its share, so
// that every part of the operation is tried.
func killAt(round, rounds int, whole time.Duration) time.Duration {
	share := whole / time.Duration(rounds)
	return time.Duration(round)*share + time.Duration(rand.Int64N(int64(share)+1))
}

// toolRequest builds a tools/call request.
func toolRequest(name string, args map[string]any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

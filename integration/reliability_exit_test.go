package integration

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wink-mcp/wink-mcp/tools"
)

// exitEnding is one way a server with --export-on-exit ends.
type exitEnding struct {
	name      string
	transport string   // stdio when empty
	args      []string // server flags besides the mount and the export
	bigMB     int      // a random file this big makes the export take seconds
	// mute: the server may be killed, or its stderr closed, before it can
	// say where unexported changes are kept.
	mute bool
	// end ends the server of p, whose patches go to exportDir.
	end func(t *testing.T, p *proc, exportDir string)
}

// sendSignal sends sig to the server of p.
func sendSignal(t *testing.T, p *proc, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v: %v", sig, err)
	}
}

// whileExporting waits until the export's temporary patch file exists (or
// the patch, on a machine fast enough), then sends sig.
func whileExporting(t *testing.T, exportDir string, sig syscall.Signal, p *proc) {
	t.Helper()
	waitUntil(t, 2*time.Minute, "the export to begin", func() bool {
		patches, temps := exportedPatches(t, exportDir)
		return len(patches)+len(temps) > 0
	})
	sendSignal(t, p, sig)
}

var exitEndings = []exitEnding{
	{name: "stdin closed (mcp-go then sends SIGTERM and SIGKILL)", mute: true, end: func(t *testing.T, p *proc, _ string) {
		_ = p.client.Close()
		p.client = nil
	}},
	{name: "SIGINT", end: func(t *testing.T, p *proc, _ string) { sendSignal(t, p, syscall.SIGINT) }},
	{name: "SIGTERM", end: func(t *testing.T, p *proc, _ string) { sendSignal(t, p, syscall.SIGTERM) }},
	{name: "SIGKILL during the export", bigMB: 48, mute: true, end: func(t *testing.T, p *proc, exportDir string) {
		sendSignal(t, p, syscall.SIGTERM)
		whileExporting(t, exportDir, syscall.SIGKILL, p)
	}},
	{name: "a second SIGTERM during the export", bigMB: 48, end: func(t *testing.T, p *proc, exportDir string) {
		sendSignal(t, p, syscall.SIGTERM)
		whileExporting(t, exportDir, syscall.SIGTERM, p)
	}},
	{name: "a 1 ms --shutdown-timeout", args: []string{"--shutdown-timeout", "1ms"}, end: func(t *testing.T, p *proc, _ string) {
		sendSignal(t, p, syscall.SIGTERM)
	}},
	{name: "SIGTERM over streamable HTTP", transport: "http", end: func(t *testing.T, p *proc, _ string) {
		sendSignal(t, p, syscall.SIGTERM)
	}},
	{name: "an HTTP session deleted then SIGKILL during its export", transport: "http", bigMB: 48, mute: true, end: func(t *testing.T, p *proc, exportDir string) {
		_ = p.client.Close() // DELETE: the session ends, the server runs on
		p.client = nil
		whileExporting(t, exportDir, syscall.SIGKILL, p)
	}},
}

// TestReliabilityExit tries, through the binary and real Podman, how a new
// user's work survives the end of a session with --export-on-exit: every
// way the server ends (a client closing stdin and killing it, signals,
// SIGKILL and a second signal in the middle of the export, a shutdown
// timeout too short, the TypeScript SDK's stdio client), a folder whose
// node_modules the changes must not drown in, and sessions with nothing to
// export.
func TestReliabilityExit(t *testing.T) {
	t.Run("every ending", func(t *testing.T) {
		written, recovered, lost := 0, 0, 0
		for _, e := range exitEndings {
			t.Run(e.name, func(t *testing.T) {
				root, folder := npmProject(t)
				cache, exportDir := t.TempDir(), t.TempDir()
				args := append([]string{"--mount", folder, "--allowed-root", root, "--export-on-exit", exportDir}, e.args...)
				p := start(t, startOptions{transport: e.transport, cache: cache, args: args})
				sum := npmWork(t, p, e.bigMB)
				e.end(t, p, exportDir)
				p.waitExit(time.Minute)
				logs := p.logs
				if e.mute {
					logs = nil
				}
				o := checkExitOutcome(t, cache, exportDir, folder, sum, logs)
				switch {
				case o.lost:
					lost++
				case o.recovered:
					recovered++
				default:
					written++
				}
				t.Logf("%s: written at exit %v, recovered by the next start %v", e.name, o.written, o.recovered)
			})
		}
		t.Run("TypeScript SDK stdio client three times", func(t *testing.T) {
			for range 3 {
				r, o := runTSExit(t)
				if !strings.Contains(r.Diff, "+app.listen(8080);") {
					t.Errorf("the real hunk is not on the first page of the diff the SDK client read:\n%.3000s", r.Diff)
				}
				t.Logf("TypeScript SDK: workspace_changes %d ms, %d bytes; workspace_diff %d ms, %d bytes; close %d ms; written at exit %v, recovered %v",
					r.ChangesMs, r.ChangesBytes, r.DiffMs, r.DiffBytes, r.CloseMs, o.written, o.recovered)
				switch {
				case o.lost:
					lost++
				case o.recovered:
					recovered++
				default:
					written++
				}
			}
		})
		recordPromise(promiseFigure{Class: "lost work at exit: a mounted npm project (20,000 ignored files in node_modules, real changes) with --export-on-exit, " +
			"ended by stdin closed, SIGINT, SIGTERM, SIGKILL and a second SIGTERM mid-export, a 1 ms --shutdown-timeout, SIGTERM over HTTP, an HTTP DELETE then SIGKILL mid-export, " +
			"and the TypeScript SDK's stdio close three times",
			Tried: len(exitEndings) + 3, Broken: lost,
			Measured: fmt.Sprintf("%d patches written at exit, %d kept and written by the next start, %d lost", written, recovered, lost)})
	})

	t.Run("every end of a handed-over workspace", func(t *testing.T) {
		exported, kept, lost := 0, 0, 0
		for _, e := range handoffEndings {
			t.Run(e.name, func(t *testing.T) {
				r := handOver(t, e.ttl, e.blocked)
				e.end(t, r)
				o := checkHandoffOutcome(t, r, e.blocked)
				switch {
				case o.lost:
					lost++
				case o.kept:
					kept++
				case o.exported:
					exported++
				}
			})
		}
		t.Logf("%d exported where due by the process that ended the workspace, %d kept for wink-mcp export and the next start, %d lost", exported, kept, lost)
		recordPromise(promiseFigure{Class: "lost work at the end of a handed-over workspace: a stdio session with --export-on-exit changes a mounted folder and hands its workspace to another process; " +
			"the handle expires in the giver's process, or at the next start after the giver ended; the process that attached it ends (with its own --export-on-exit elsewhere), " +
			"stops with the export folder unwritable, or is killed with SIGKILL before a new start",
			Tried: len(handoffEndings), Broken: lost,
			Measured: fmt.Sprintf("%d exported where the giver's flag said by the process that ended it, %d kept where wink-mcp export found them and exported by the next start, %d lost",
				exported, kept, lost)})
	})

	t.Run("ignored trees", func(t *testing.T) {
		root, folder := npmProject(t)
		exportDir := t.TempDir()
		p := start(t, startOptions{args: []string{"--mount", folder, "--allowed-root", root, "--export-on-exit", exportDir}})
		npmWork(t, p, 0)
		broken, tried := 0, 0
		check := func(ok bool, format string, args ...any) {
			tried++
			if !ok {
				broken++
				t.Errorf(format, args...)
			}
		}

		began := time.Now()
		res := p.call("workspace_changes", nil)
		changesMs := time.Since(began).Milliseconds()
		changesBytes := len(textOf(res))
		var changes tools.WorkspaceChangesResult
		decodeStructured(t, res, &changes)
		real, summary := []string{}, map[string]int{}
		for _, c := range changes.Changes {
			if c.Kind == "directory" {
				summary[c.Path] = c.Files
			} else {
				check(len(summary) == 0, "the real change %s comes after a summary", c.Path)
				real = append(real, c.Path)
			}
		}
		check(strings.Join(real, " ") == "proj/src/index.js proj/src/routes.js", "workspace_changes' real changes: %v", real)
		check(summary["proj/node_modules/"] == nodeModulesFiles && len(summary) == 2, "workspace_changes' summaries %v, want node_modules with %d files and ./ with the log", summary, nodeModulesFiles)
		check(changesBytes < 4096, "workspace_changes' text is %d bytes", changesBytes)

		began = time.Now()
		res = p.call("workspace_diff", map[string]any{"offset": 0, "limit": 2000})
		diffMs := time.Since(began).Milliseconds()
		var page tools.WorkspaceDiffResult
		decodeStructured(t, res, &page)
		hunk := strings.Index(page.Diff, "+app.listen(8080);")
		left := strings.Count(page.Diff, "# not in this patch")
		check(hunk >= 0 && hunk < strings.Index(page.Diff, "# not in this patch"), "the real hunk is not first on the diff's first page:\n%.3000s", page.Diff)
		check(left == 2 && page.TotalLines < 100, "the diff has %d lines, %d of them left-out lines", page.TotalLines, left)

		// SIGTERM rather than closing stdin: the client would close the
		// server's stderr too, and the export's log records with it.
		sendSignal(t, p, syscall.SIGTERM)
		p.waitExit(time.Minute)
		patches, _ := exportedPatches(t, exportDir)
		check(len(patches) == 1, "export on exit wrote %v", patches)
		patchBytes, exportMs := 0, 0.0
		if len(patches) == 1 {
			patchBytes = len(checkNpmPatch(t, folder, patches[0], ""))
		}
		if rec := p.logs.find("exported the session's changes", nil); rec != nil {
			exportMs, _ = rec["duration_ms"].(float64)
		}
		logged := 0
		for _, rec := range p.logs.records() {
			if rec["msg"] == "left out of the exported patch" {
				logged++
			}
		}
		check(patchBytes > 0 && patchBytes < 8192, "the patch of a one-line change and a new file is %d bytes", patchBytes)
		check(logged == 2, "%d log records name what the export left out, want one per summary (2)", logged)
		measured := fmt.Sprintf("%d ignored files beside a one-line change and a new file: workspace_changes %d ms and %d bytes, workspace_diff %d ms with the hunk on page one "+
			"(%d lines), export %.0f ms, patch %d bytes, %d left-out log records", nodeModulesFiles, changesMs, changesBytes, diffMs, page.TotalLines, exportMs, patchBytes, logged)
		t.Log(measured)
		recordPromise(promiseFigure{Class: "changes drown in ignored files: workspace_changes, workspace_diff and the export at exit after an npm install of 20,000 files in a mounted folder",
			Tried: tried, Broken: broken, Measured: measured})
	})

	t.Run("nothing to export", func(t *testing.T) {
		exportDir := t.TempDir()
		broken := 0
		for _, tc := range []struct {
			name string
			work []string
		}{
			{"a session that changed nothing", []string{"ls", "proj"}},
			{"a session that only made ignored files", []string{"sh", "-c", "mkdir -p proj/node_modules/x && echo x > proj/node_modules/x/i.js && echo log > proj/debug.log"}},
		} {
			root, folder := npmProject(t)
			p := start(t, startOptions{args: []string{"--mount", folder, "--allowed-root", root, "--export-on-exit", exportDir}})
			if res := p.run(tc.work...); res.ExitCode != 0 {
				t.Fatalf("%s: %+v", tc.name, res)
			}
			p.endSession()
			if entries, _ := os.ReadDir(exportDir); len(entries) > 0 {
				broken++
				t.Errorf("%s left %d entries in the export folder", tc.name, len(entries))
				must(t, os.RemoveAll(exportDir))
				must(t, os.Mkdir(exportDir, 0o755))
			}
		}
		recordPromise(promiseFigure{Class: "sessions with nothing a patch can hold (no change, or only ignored files) leave nothing in the export folder",
			Tried: 2, Broken: broken, Measured: fmt.Sprintf("%d of 2 left something", broken)})
	})
}

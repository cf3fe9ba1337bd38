package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/checkpoints"
	"github.com/wink-mcp/wink-mcp/hostcmd"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// checkpoints says where checkpoints and kept workspaces live and what
// they take, and whether processes can be checkpointed too (they are not:
// see processes).
func (d *doctor) checkpoints(context.Context) Result {
	limit := "no limit"
	if d.cfg.CheckpointBytes > 0 {
		limit = checkpoints.FormatBytes(d.cfg.CheckpointBytes) + " each"
	}
	kept, err := workspace.ListKept(d.cfg.CacheDir)
	if err != nil {
		return Result{Status: Warn, Detail: fmt.Sprintf("kept workspaces under %s cannot be listed: %v", d.cfg.CacheDir, err), Fix: "check the cache directory's permissions"}
	}
	var files, store int64
	for _, k := range kept {
		files, store = files+k.FilesBytes, store+k.StoreBytes
	}
	detail := fmt.Sprintf("files only, saved through the agent into %s (%s); %d kept workspaces (%s of files, %s of checkpoints; `wink-mcp workspaces`)",
		d.cfg.CacheDir, limit, len(kept), checkpoints.FormatBytes(files), checkpoints.FormatBytes(store))
	switch {
	case d.pods():
		shared := workspace.CheckpointDirOf(d.cfg.CheckpointDir, d.cfg.CacheDir)
		detail = fmt.Sprintf("files only, saved through the agent into %s (%s); a kept workspace's into %s, which every replica must share", d.cfg.CacheDir, limit, shared)
		if err := writable(shared); err != nil {
			return Result{Status: Warn, Detail: detail + fmt.Sprintf("; it cannot be written: %v", err),
				Fix: "give --checkpoint-dir a directory the server's user can write: in a cluster, a volume mounted into every replica and into no workspace Pod (deploy/kubernetes/checkpoints.yaml)"}
		}
		return Result{Status: OK, Detail: detail + "; a Pod's /workspace goes with the Pod, so one removed for idleness or a profile restart has its files saved there and restored into the next " +
			"(on a claim, --kubernetes-workspace-volume claim, they stay on it); a workspace kept by name lives in the cluster, a PersistentVolumeClaim and a Lease each " +
			"(`wink-mcp workspaces --engine kubernetes`), its checkpoints in the shared directory, where any replica finds them; no session hands a workspace to another process " +
			"(a handoff over HTTP keeps the Pod for a session of this server)"}
	case d.cfg.FilesOnEngineHost:
		return Result{Status: OK, Detail: detail + "; with the files on the Podman host, sessions cannot keep a workspace by name or hand one to another process"}
	}
	return Result{Status: OK, Detail: detail}
}

// processes says why running processes are not checkpointed: what CRIU,
// which Podman's `container checkpoint` needs, says on this machine, or,
// for Pods, that they end with their Pod.
func (d *doctor) processes(ctx context.Context) Result {
	const lost = "running processes are not kept by checkpoints, restarts or handoffs to another process (start them again): "
	if d.pods() {
		return Result{Status: OK, Detail: lost + "a Pod's processes end with it (an idle clean-up, a profile restart, the session's end); " +
			"wink-mcp does not use the kubelet's container checkpoint API, which saves a forensic archive and restores nothing into a Pod"}
	}
	why := d.host.criu(ctx)
	if d.cfg.Engine.Service().Remote {
		why = "the Podman host's CRIU is not checked from here"
	}
	return Result{Status: OK, Detail: lost + why}
}

// criuCheck runs `criu check` and says what it found, in a line.
func criuCheck(ctx context.Context) string {
	path, err := exec.LookPath("criu")
	if err != nil {
		for _, p := range []string{"/usr/sbin/criu", "/sbin/criu"} {
			if _, err := os.Stat(p); err == nil {
				path = p
			}
		}
	}
	if path == "" {
		return "CRIU is not installed"
	}
	if os.Geteuid() != 0 {
		return "`criu check` needs root"
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := hostcmd.Command(ctx, path, nil, "check").CombinedOutput()
	if err == nil {
		return "`criu check` passes, but wink-mcp does not use it (see docs/checkpoints.md, Processes across hibernation)"
	}
	first := strings.TrimSpace(string(out))
	for _, line := range strings.Split(first, "\n") {
		if strings.HasPrefix(line, "Error") {
			first = line
			break
		}
	}
	return "`criu check` fails here: " + first
}

// writable makes dir when missing and writes and removes a file in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".doctor-")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

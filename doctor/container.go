package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// probeScript prints, from inside the container, what the hardening
// should make of it: the user id, the effective capabilities, the type of
// the filesystem at /workspace and the network interfaces. It needs only a
// shell, grep and ls.
const probeScript = `id -u; grep '^CapEff:' /proc/self/status
while read -r dev dir fs rest; do [ "$dir" = /workspace ] && echo "$fs"; done < /proc/mounts
ls /sys/class/net`

// container starts a real session container with the configured hardening,
// looks at it from inside, writes a file in /workspace, removes it, and
// checks it is gone.
func (d *doctor) container(ctx context.Context) Result {
	if d.info == nil || !d.imageOK || !d.agentOK || !d.mountsOK {
		return skipped("the service, the image, the agent binary and the mounts")
	}
	ctx, cancel := context.WithTimeout(ctx, containerCheckTimeout)
	defer cancel()
	m, err := workspace.NewManager(d.cfg, d.log)
	if err != nil {
		return Result{Status: Fail, Detail: err.Error(), Fix: containerFix(err, d.svc.ServiceFix())}
	}
	s, err := m.Session("doctor")
	if err != nil {
		m.Close(ctx)
		return Result{Status: Fail, Detail: err.Error(), Fix: containerFix(err, d.svc.ServiceFix())}
	}
	start := time.Now()
	_, err = s.Start(ctx)
	startup := time.Since(start)
	var probe workspace.ExecResult
	if err == nil {
		probe, err = s.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", probeScript}, Timeout: 20 * time.Second, Capture: true, OutputLimit: 4096})
	}
	if err == nil {
		files, _ := tools.PartOf[tools.FileWriter](s)
		_, err = files.WriteFile(ctx, "doctor.txt", "written by wink-mcp doctor\n")
	}
	name := s.Info().Name
	closeErr := m.Close(ctx)
	exists, existsErr := d.svc.ContainerExists(ctx, name)
	switch {
	case err != nil && d.network != nil && !d.network.Enforced && !d.network.Allowed:
		return Result{Status: Fail, Detail: "a hardened container did not work: " + err.Error(), Fix: "see the egress line"}
	case err != nil:
		return Result{Status: Fail, Detail: "a hardened container did not work: " + err.Error(), Fix: containerFix(err, d.svc.ServiceFix())}
	case existsErr != nil || exists:
		return Result{Status: Fail, Detail: fmt.Sprintf("container %s was not removed: %v %v", name, existsErr, closeErr),
			Fix: "remove it with `podman rm -f " + name + "`; check the service's logs for why removal fails"}
	}
	user := s.Info().User
	// A Pod's eth0 is the policy's to cut off, which the network line checks.
	podNetwork := d.network != nil && (d.network.Enforced || d.network.Allowed)
	if problem := hardeningProblem(probe, user, d.diskOwn, podNetwork); problem != "" {
		return Result{Status: Fail, Detail: "the container is not hardened as configured: " + problem,
			Fix: "use Podman 4.3 or later; report it with the output of `podman info` if it persists"}
	}
	disk := ""
	if d.diskOwn {
		disk = " on its own ext4 filesystem"
	}
	network := "no network"
	switch {
	case podNetwork:
		network = podNetworkWords(d.network)
	case d.cfg.EgressOn():
		network = "no network interface but loopback (its egress proxy answered)"
	}
	return Result{Status: OK, Detail: fmt.Sprintf("started in %d ms as uid %s with no capabilities and %s; /workspace writable%s; removed",
		startup.Milliseconds(), strings.SplitN(user, ":", 2)[0], network, disk)}
}

// hardeningProblem reads the probe's output and says what is not as
// configured, or "" when all is; ownDisk says /workspace must be the
// session's own ext4 filesystem (the disk limit is enforced); podNetwork
// that the container is a Pod whose one device besides loopback, eth0, a
// policy cuts off (enforced, or unenforced and allowed).
func hardeningProblem(r workspace.ExecResult, user string, ownDisk, podNetwork bool) string {
	if r.ExitCode != 0 {
		return fmt.Sprintf("the probe exited with %d: %s", r.ExitCode, strings.TrimSpace(r.Stderr))
	}
	lines := strings.Fields(r.Stdout)
	uid, _, _ := strings.Cut(user, ":")
	if len(lines) < 4 || lines[0] != uid {
		return fmt.Sprintf("want uid %s, the probe printed %q", uid, r.Stdout)
	}
	var problems []string
	if lines[1] != "CapEff:" || strings.Trim(lines[2], "0") != "" {
		problems = append(problems, fmt.Sprintf("effective capabilities %s, want none", lines[2]))
	}
	if ownDisk && lines[3] != "ext4" {
		problems = append(problems, fmt.Sprintf("/workspace is on %s, not the session's own ext4 filesystem, so the disk limit does not hold", lines[3]))
	}
	ifaces := lines[4:]
	switch {
	case podNetwork && !slices.Equal(ifaces, []string{"eth0", "lo"}):
		problems = append(problems, fmt.Sprintf("network interfaces %v, want lo and the Pod's eth0", ifaces))
	case !podNetwork && (len(ifaces) != 1 || ifaces[0] != "lo"):
		problems = append(problems, fmt.Sprintf("network interfaces %v, want only lo", ifaces))
	}
	return strings.Join(problems, "; ")
}

// containerFix names the remedy for a container that would not start;
// serviceFix is the engine's, for a service that cannot be reached.
func containerFix(err error, serviceFix string) string {
	msg := err.Error()
	switch {
	case errors.Is(err, engine.ErrUnreachable):
		return serviceFix
	case errors.Is(err, engine.ErrImageUnavailable):
		return workspace.ImageRemedy
	case errors.Is(err, workspace.ErrLimitsUnenforceable):
		return "see the runtime line"
	case strings.Contains(msg, "hybrid mode"):
		return "crun does not support hybrid cgroups: install runc, set runtime = \"runc\" under [engine] in /etc/containers/containers.conf, and restart the Podman service"
	case strings.Contains(msg, "RLIMIT_") || strings.Contains(msg, "setrlimit"):
		return "lower --nofile and --nproc to the host's hard limits (`ulimit -Hn`, `ulimit -Hu`)"
	case strings.Contains(msg, "executable file not found") || strings.Contains(msg, "no such file"):
		return "use an image with /bin/sh (podman_shell needs a shell), e.g. " + workspace.LocalImage + ", which `make setup` builds"
	}
	return "rerun with --log-level debug, and read the Podman service's log (`journalctl -u podman` or its stderr)"
}

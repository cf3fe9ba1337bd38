package integration

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// rootlessV2Args are what a rootless user on cgroups v2 passes: no opt-in,
// since every limit is enforced, and no disk limit (it needs root). The
// longer Podman deadline is for `make rootless-v2`, whose VM emulates its CPU.
var rootlessV2Args = []string{"--disk-limit", "0", "--warm", "0", "--podman-timeout", "2m",
	"--memory", "256m", "--cpus", "0.5", "--pids-limit", "64"}

// needCgroupsV2 skips the test unless the rootless user's Podman runs on
// cgroups v2 with the memory, CPU and pids controllers delegated to it.
// This machine's cgroups are hybrid; `make rootless-v2` runs the test in a
// VM booted with the unified hierarchy.
func needCgroupsV2(t *testing.T, u *rootlessUser) {
	t.Helper()
	out, err := u.podman("info", "--format", "{{.Host.CgroupsVersion}} {{json .Host.CgroupControllers}}")
	if err != nil {
		t.Fatalf("podman info: %v: %s", err, out)
	}
	version, controllers, _ := strings.Cut(out, " ")
	var delegated []string
	if err := json.Unmarshal([]byte(controllers), &delegated); err != nil {
		t.Fatalf("podman info's controllers %q: %v", controllers, err)
	}
	if version != "v2" {
		t.Skipf("rootless Podman here is on cgroups %s; `make rootless-v2` runs this test in a VM with cgroups v2", version)
	}
	for _, c := range []string{"memory", "cpu", "pids"} {
		if !strings.Contains(" "+strings.Join(delegated, " ")+" ", " "+c+" ") {
			t.Fatalf("cgroups v2, but the %s controller is not delegated to %s (delegated: %v)", c, u.name, delegated)
		}
	}
}

// On cgroups v2 with the controllers delegated, a plain user's sessions get
// every limit, enforced and checked, with no opt-in: the container's own
// cgroup files say so, a memory bomb is killed alone, a fork bomb stops at
// the pids limit, and doctor's runtime line says the limits are enforced.
func TestRootlessV2EnforcesEveryLimit(t *testing.T) {
	u := needRootless(t)
	needCgroupsV2(t, u)

	doc := exec.Command(u.bin, append([]string{"doctor", "--cache-dir", u.dir(t)}, rootlessV2Args...)...)
	u.apply(doc)
	out, _ := doc.CombinedOutput()
	if !strings.Contains(string(out), "memory, CPU and process limits enforced") {
		t.Errorf("doctor does not say the limits are enforced:\n%s", out)
	}

	p := start(t, startOptions{as: u, image: pythonImage, args: rootlessV2Args})
	fileToolsScenario(t, p)
	name := p.container()
	checkRootlessHardening(t, u, name)
	inspect, err := u.podman("inspect", "--format", "{{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.HostConfig.CpuQuota}} {{.HostConfig.CpuPeriod}}", name)
	if err != nil || inspect != "268435456 64 5000 10000" {
		t.Errorf("inspected memory, pids, CPU quota and period %q (%v), want 268435456 64 5000 10000", inspect, err)
	}
	cgroup := p.run("sh", "-c", "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.swap.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max")
	if got := strings.Fields(cgroup.Stdout); strings.Join(got, " ") != "268435456 0 64 5000 10000" {
		t.Errorf("the container's cgroup says %q (stderr %q), want memory 268435456, no swap, pids 64, cpu 5000 10000", cgroup.Stdout, cgroup.Stderr)
	}
	if p.logs.find("RESOURCE LIMITS ARE NOT ENFORCED", nil) != nil {
		t.Error("the server says the limits are off, on a host that enforces them")
	}
	if text := p.promptText(); strings.Contains(text, "limits not enforced") {
		t.Errorf("the prompt says the limits are off:\n%s", text)
	}

	bomb := p.shell(map[string]any{"command": []string{"python3", "-c", "b = bytearray(1 << 30); print('survived')"}, "timeout_seconds": 120})
	if bomb.ExitCode != 137 || strings.Contains(bomb.Stdout, "survived") {
		t.Errorf("a 1 GiB allocation under a 256 MiB limit: exit %d, stdout %q, stderr %q; want it killed (137)", bomb.ExitCode, bomb.Stdout, bomb.Stderr)
	}
	if want := "killed by the workspace's memory limit of 256 MiB (out of memory)"; bomb.OutOfMemory != want {
		t.Errorf("the OOM-killed command's out_of_memory is %q, want %q (read from memory.events on cgroups v2)", bomb.OutOfMemory, want)
	}
	forks := p.shell(map[string]any{"command": []string{"python3", "-c", forkBomb}, "timeout_seconds": 120})
	forked, err := strconv.Atoi(strings.TrimSpace(forks.Stdout))
	if err != nil || forked == 0 || forked >= 64 {
		t.Errorf("a fork bomb under --pids-limit 64 made %q children (stderr %q); want fewer than 64", forks.Stdout, forks.Stderr)
	}
	if res := p.run("echo", "alive"); strings.TrimSpace(res.Stdout) != "alive" {
		t.Errorf("the workspace after the bombs: %q", res.Stdout)
	}
	dir := p.sessionDir()
	p.endSession()
	if left := u.containersNamed(t, p.prefix); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
	if fileExists(dir) {
		t.Errorf("session directory %s left", dir)
	}
}

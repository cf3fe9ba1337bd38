package integration

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// inspected is the part of `podman inspect` the hardening check reads.
type inspected struct {
	Config struct {
		User       string
		WorkingDir string
		Labels     map[string]string
	}
	HostConfig struct {
		NetworkMode string
		CapAdd      []string
		CapDrop     []string
		SecurityOpt []string
		Privileged  bool
		Memory      int64
		MemorySwap  int64
		CpuQuota    int64
		CpuPeriod   int64
		CpuShares   int64
		PidsLimit   int64
		Tmpfs       map[string]string
		Ulimits     []struct {
			Name       string
			Soft, Hard uint64
		}
	}
	Mounts []struct {
		Type, Source, Destination string
		RW                        bool
	}
}

// TestContainerHardening inspects a container as created and checks every
// hardening setting, then checks from inside that they hold. Over SSE and
// HTTP the container comes from the default pool (see also pool_test.go).
func TestContainerHardening(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr string) {
		p := start(t, startOptions{transport: tr})
		checkHardening(t, p, p.container())
	})
}

// checkHardening checks every hardening setting of the session's container
// name, as Podman reports it and from inside.
func checkHardening(t *testing.T, p *proc, name string) {
	t.Helper()
	out, err := podman(t, "inspect", name)
	if err != nil {
		t.Fatalf("podman inspect: %v %s", err, out)
	}
	var all []inspected
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 1 {
		t.Fatalf("inspect output: %v", err)
	}
	c := all[0]
	hc := c.HostConfig
	check := func(ok bool, format string, args ...any) {
		t.Helper()
		if !ok {
			t.Errorf(format, args...)
		}
	}
	check(hc.NetworkMode == "none", "network mode %q, want none", hc.NetworkMode)
	check(len(hc.CapAdd) == 0 && slices.Contains(hc.CapDrop, "CAP_SYS_CHROOT") && slices.Contains(hc.CapDrop, "CAP_SETUID") &&
		slices.Contains(hc.CapDrop, "CAP_NET_RAW") && slices.Contains(hc.CapDrop, "CAP_CHOWN"),
		"capabilities: add %v drop %v", hc.CapAdd, hc.CapDrop)
	check(slices.Contains(hc.SecurityOpt, "no-new-privileges"), "security options %v lack no-new-privileges", hc.SecurityOpt)
	check(!hc.Privileged, "privileged")
	check(c.Config.User == "65534:65534", "user %q", c.Config.User)
	check(c.Config.WorkingDir == "/workspace", "working directory %q", c.Config.WorkingDir)
	check(hc.Memory == 1<<30 && hc.MemorySwap == 1<<30, "memory %d, memory+swap %d; want 1 GiB and no swap beyond it", hc.Memory, hc.MemorySwap)
	check(hc.CpuQuota == 10_000 && hc.CpuPeriod == 10_000 && hc.CpuShares == 128,
		"cpu quota %d / period %d, shares %d; want one CPU over 10 ms periods at shares 128", hc.CpuQuota, hc.CpuPeriod, hc.CpuShares)
	check(hc.PidsLimit == 256, "pids limit %d", hc.PidsLimit)
	tmp := hc.Tmpfs["/tmp"]
	check(strings.Contains(tmp, "size=268435456") && strings.Contains(tmp, "nosuid") && strings.Contains(tmp, "uid=65534"), "tmpfs /tmp: %q", tmp)
	limits := map[string]uint64{}
	for _, u := range hc.Ulimits {
		limits[u.Name] = u.Hard
	}
	check(limits["RLIMIT_NOFILE"] == 4096 && limits["RLIMIT_NPROC"] == 4096, "ulimits %v", hc.Ulimits)
	check(c.Config.Labels["io.wink-mcp.managed"] == "true" && len(c.Config.Labels["io.wink-mcp.session"]) == 16 &&
		c.Config.Labels["io.wink-mcp.instance"] != "" && strings.HasPrefix(c.Config.Labels["io.wink-mcp.lock"], p.cache),
		"labels %v", c.Config.Labels)
	for _, m := range c.Mounts {
		switch m.Destination {
		case "/workspace":
			check(m.RW && strings.HasPrefix(m.Source, p.cache), "workspace mount %+v", m)
		case "/.wink/wink-mcp":
			check(!m.RW, "the agent binary is mounted writable")
		case "/run/wink-tunnel":
			// The egress tunnel's socket directory (local Podman): its own,
			// read-only, from this server's cache directory.
			check(!m.RW && strings.HasPrefix(m.Source, filepath.Join(p.cache, "tunnels")+"/"), "tunnel socket mount %+v", m)
		default:
			t.Errorf("unexpected mount %+v", m)
		}
	}

	inside := p.run("sh", "-c", "id -u; id -g; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status; "+
		"tail -n +3 /proc/net/dev | cut -d: -f1; touch /tmp/w && echo tmp-writable; touch /workspace/w && echo workspace-writable; "+
		"touch /etc/w 2>/dev/null || echo etc-readonly-for-user; ulimit -n")
	want := []string{"65534\n65534\n", "CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "tmp-writable", "workspace-writable",
		"etc-readonly-for-user", "\n4096\n"}
	for _, w := range want {
		if !strings.Contains(inside.Stdout, w) {
			t.Errorf("inside the container, missing %q in:\n%s", w, inside.Stdout)
		}
	}
	ifaces := strings.Fields(strings.Split(strings.Split(inside.Stdout, "NoNewPrivs:\t1\n")[1], "tmp-writable")[0])
	if !slices.Equal(ifaces, []string{"lo"}) {
		t.Errorf("network interfaces %v, want only lo", ifaces)
	}
	// The commands share the agent's user; they still cannot stop it.
	p.run("sh", "-c", "kill -9 1; kill -TERM 1; kill -INT 1; true")
	if res := p.run("echo", "agent still here"); res.Stdout != "agent still here\n" || p.logs.count("recreated_after_failure") != 0 {
		t.Errorf("after signalling PID 1: %+v, %d recreations", res, p.logs.count("recreated_after_failure"))
	}
	if res := p.run("sh", "-c", "cat /proc/1/environ >/dev/null 2>&1 && echo readable || echo denied"); res.Stdout != "denied\n" {
		t.Errorf("the agent's /proc entry is readable by commands: %q", res.Stdout)
	}
	if name == "" || strings.Contains(name, "stdio") {
		t.Errorf("container name %q reveals the session id", name)
	}
}

// Package machine describes the host that measurements were taken on, so
// published figures can name it: CPUs, memory, kernel, distribution, and
// the versions of Go, Podman, runc and conmon.
package machine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/wink-mcp/wink-mcp/hostcmd"
)

// Describe returns what it can find of this host, keyed by "cpus", "cpu",
// "memory", "kernel", "os", "go", "podman", "runc" and "conmon"; a key whose
// value cannot be read is left out, a tool that does not answer is "unknown".
func Describe() map[string]string {
	m := map[string]string{"cpus": fmt.Sprint(runtime.NumCPU()), "go": runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				m["cpu"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		m["memory"] = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m["os"] = strings.Trim(v, `"`)
			}
		}
	}
	m["podman"] = firstLine("podman", "version", "--format", "{{.Server.Version}}")
	m["runc"] = firstLine("runc", "--version")
	m["conmon"] = firstLine("conmon", "--version")
	return m
}

// firstLine runs a command and returns the first line of its output.
func firstLine(name string, args ...string) string {
	out, err := hostcmd.Command(context.Background(), name, hostcmd.Podman, args...).Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawSession runs wink-mcp with plain pipes, writes the given lines, and
// returns every line it writes to stdout until it has answered `answers`
// requests, and its log; then it closes stdin and checks that it exits
// cleanly and leaves no container.
func rawSession(t *testing.T, requests []string, answers int) ([]string, *logBuffer) {
	t.Helper()
	prefix := "wt" + randomHex(4)
	cmd := exec.Command(winkBin, "--image", testImage, "--cache-dir", t.TempDir(), "--name-prefix", prefix,
		"--podman-url", "unix://"+podmanSocket, "--log-level", "debug", "--log-format", "json")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		removeContainers(t, prefix)
	})
	if _, err := io.WriteString(stdin, strings.Join(requests, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var out []string
	answered := 0
	timeout := time.After(60 * time.Second)
	for answered < answers {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended after %d answers; log:\n%s", answered, logs.String())
			}
			out = append(out, line)
			var msg struct {
				ID *json.RawMessage `json:"id"`
			}
			if json.Unmarshal([]byte(line), &msg) == nil && msg.ID != nil {
				answered++
			}
		case <-timeout:
			t.Fatalf("only %d of %d answers within 60 s; log:\n%s", answered, answers, logs.String())
		}
	}
	stdin.Close()
	for line := range lines {
		out = append(out, line)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("wink-mcp exited with %v after stdin closed", err)
	}
	if len(containersNamed(t, prefix)) != 0 {
		t.Error("container left after stdin closed")
	}
	return out, logs
}

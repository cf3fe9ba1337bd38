package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wink-mcp/wink-mcp/server"
)

// TestReliabilityTransport tries, through the real binary and Podman, what
// a careless or hostile client can put in a request around the members
// the server checks before mcp-go serves it.
func TestReliabilityTransport(t *testing.T) {
	t.Run("task cap with stray members", func(t *testing.T) {
		// Members a tools/call does not use, of every JSON type but the one
		// a subscription's uri has: each once made the server's checks skip
		// the call, so its task reserved no place under the cap.
		strays := []string{`"uri":5`, `"uri":[1]`, `"uri":{"a":1}`, `"uri":true`, `"uri":"x"`}
		tried := server.MaxTasksPerSession + 1
		requests := []string{initializeLine, `{"jsonrpc":"2.0","method":"notifications/initialized"}`}
		for i := range tried {
			requests = append(requests, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"podman_shell","arguments":{"command":["sleep","60"]},%s,"task":{}}}`,
				100+i, strays[i%len(strays)]))
		}
		lines, _ := rawSession(t, requests, 1+tried)
		answers := map[string]string{}
		for _, line := range lines {
			for i := range tried {
				if strings.Contains(line, fmt.Sprintf(`"id":%d,`, 100+i)) {
					answers[fmt.Sprint(i)] = line
				}
			}
		}
		// The server reads a stdio session's requests in order but serves
		// them concurrently, so which call meets the cap is not fixed: the
		// cap holds when exactly MaxTasksPerSession calls get a task and
		// the one left over is refused, naming the cap.
		broken, tasks, refused := 0, 0, 0
		for i := range tried {
			answer := answers[fmt.Sprint(i)]
			switch {
			case strings.Contains(answer, `"taskId"`):
				tasks++
			case strings.Contains(answer, "the most allowed"):
				refused++
			default:
				broken++
				t.Errorf("task call %d (%s): %.300s", i+1, strays[i%len(strays)], answer)
			}
		}
		if tasks != server.MaxTasksPerSession || refused != 1 {
			broken += max(tasks-server.MaxTasksPerSession, 0) + max(refused-1, 0)
			t.Errorf("%d calls got a task and %d were refused at the cap; want %d and 1", tasks, refused, server.MaxTasksPerSession)
		}
		recordPromise(promiseFigure{Class: "task cap: task calls carrying members the checks do not need (a uri of each JSON type)", Tried: tried, Broken: broken,
			Measured: fmt.Sprintf("%d of %d task calls got a task and call %d was refused at the cap of %d per session", tasks, server.MaxTasksPerSession, tried, server.MaxTasksPerSession)})
	})
}

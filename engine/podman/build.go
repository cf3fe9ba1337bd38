//go:build containers_image_openpgp

package podman

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"

	"github.com/wink-mcp/wink-mcp/engine"
)

// Builder builds images through the Podman service's build API on the
// connection of its Engine (engine.ImageBuilder). It is a type of its
// own so that Engine keeps to its job of making containers.
type Builder struct{ e *Engine }

// NewBuilder returns the image builder of e.
func NewBuilder(e *Engine) *Builder { return &Builder{e: e} }

// buildOutputLines bounds the lines of a failed build's error.
const buildOutputLines = 30

// BuildImage implements engine.ImageBuilder. The RUN steps join the
// network namespace of req.NetworkOf by its process's path, so they have
// its loopback alone (no network device), and the service's own proxy
// variables are not passed in.
func (b *Builder) BuildImage(ctx context.Context, req engine.BuildRequest) (err error) {
	pid, err := b.pid(ctx, req.NetworkOf)
	if err != nil {
		return err
	}
	connCtx, err := b.e.connect(ctx)
	if err != nil {
		return err
	}
	c, end := within(ctx, connCtx, b.e.pullTimeout)
	defer end(&err)
	conn, err := bindings.GetClient(c)
	if err != nil {
		return err
	}
	params, err := buildParams(req, pid)
	if err != nil {
		return err
	}
	headers := http.Header{"Content-Type": {"application/x-tar"}}
	resp, err := conn.DoRequest(c, req.Context, http.MethodPost, "/build", params, headers)
	if err != nil {
		return fmt.Errorf("building %s: %w", req.Image, err)
	}
	defer resp.Body.Close()
	if !resp.IsSuccess() {
		return fmt.Errorf("%w: building %s: %w", engine.ErrBuildFailed, req.Image, resp.Process(nil))
	}
	return readBuildStream(resp.Body, req)
}

// pid is the host process of the running container name.
func (b *Builder) pid(ctx context.Context, name string) (_ int, err error) {
	c, end, err := b.e.call(ctx)
	if err != nil {
		return 0, err
	}
	defer end(&err)
	data, err := containers.Inspect(c, name, nil)
	if err != nil {
		return 0, fmt.Errorf("inspecting the build's network container %s: %w", name, err)
	}
	if data.State == nil || data.State.Pid <= 0 {
		return 0, fmt.Errorf("the build's network container %s does not run", name)
	}
	return data.State.Pid, nil
}

// buildParams are the build API's parameters of req.
func buildParams(req engine.BuildRequest, pid int) (url.Values, error) {
	nsoptions, err := json.Marshal([]map[string]any{{"Name": "network", "Path": fmt.Sprintf("/proc/%d/ns/net", pid)}})
	if err != nil {
		return nil, err
	}
	labels, err := json.Marshal(req.Labels)
	if err != nil {
		return nil, err
	}
	args, err := json.Marshal(req.Args)
	if err != nil {
		return nil, err
	}
	p := url.Values{}
	p.Set("dockerfile", req.Dockerfile)
	p.Set("t", req.Image)
	p.Set("labels", string(labels))
	p.Set("buildargs", string(args))
	p.Set("nsoptions", string(nsoptions))
	p.Set("httpproxy", "false")
	p.Set("rm", "true")
	p.Set("forcerm", "true")
	p.Set("layers", "false")
	p.Set("pull", "false") // the FROM image is pulled when missing, never refreshed
	if l := req.Limits; l.MemoryBytes > 0 {
		p.Set("memory", strconv.FormatInt(l.MemoryBytes, 10))
		p.Set("memswap", strconv.FormatInt(l.MemoryBytes, 10))
	}
	if l := req.Limits; l.CPUs > 0 {
		p.Set("cpuperiod", "100000")
		p.Set("cpuquota", strconv.FormatInt(int64(l.CPUs*100000), 10))
	}
	return p, nil
}

// readBuildStream reads the build's JSON lines: output to req.Output, an
// "error" line into the error with the output's last lines.
func readBuildStream(r io.Reader, req engine.BuildRequest) error {
	var tail []string
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: building %s: the service ended the build without saying it was done", engine.ErrBuildFailed, req.Image)
			}
			return fmt.Errorf("building %s: reading the service's answer: %w", req.Image, err)
		}
		for _, line := range strings.Split(strings.TrimRight(msg.Stream, "\n"), "\n") {
			if line == "" {
				continue
			}
			if req.Output != nil {
				req.Output(line)
			}
			if tail = append(tail, line); len(tail) > buildOutputLines {
				tail = tail[1:]
			}
			if strings.HasPrefix(line, "Successfully tagged ") {
				return nil
			}
		}
		if msg.Error != "" {
			return fmt.Errorf("%w: %s\n--- the build's last lines ---\n%s", engine.ErrBuildFailed, strings.TrimSpace(msg.Error), strings.Join(tail, "\n"))
		}
	}
}

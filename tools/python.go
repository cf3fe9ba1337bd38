package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/schema"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// Limits of evaluate_python.
const (
	pythonTimeout     = 5 * time.Second
	pythonOutputChars = 4096
)

// PythonRead names a file to load before the code runs.
type PythonRead struct {
	Path string `json:"path" jsonschema:"maxLength=1295" jsonschema_description:"File relative to /workspace; its text is in reads[path]."`
}

// PythonWriteParams is a file to write after a successful run.
type PythonWriteParams struct {
	Path    string `json:"path" jsonschema:"maxLength=1295" jsonschema_description:"File relative to /workspace."`
	Content string `json:"content" jsonschema:"maxLength=48000" jsonschema_description:"Text to write; {name} is replaced by str() of the variable name after the run (other braces are kept)."`
	Mode    string `json:"mode,omitempty" jsonschema:"enum=create,enum=overwrite,enum=append,default=create" jsonschema_description:"create (the file must not exist), overwrite or append (it must exist)."`
}

// PythonParams are evaluate_python's arguments.
type PythonParams struct {
	Code    string              `json:"code" jsonschema:"minLength=1,maxLength=2000" jsonschema_description:"Python 3 code, at most 2000 characters. The value of a final expression is returned as value_repr, as in a REPL."`
	Globals map[string]string   `json:"globals,omitempty" jsonschema_description:"Variables set before the code runs: name to JSON-encoded value (a string is \"\\\"text\\\"\")."`
	Reads   []PythonRead        `json:"reads,omitempty" jsonschema:"maxItems=16" jsonschema_description:"Files loaded before the code runs, available as the dict reads (path to text)."`
	Writes  []PythonWriteParams `json:"writes,omitempty" jsonschema:"maxItems=16" jsonschema_description:"Files written after the code succeeds (no exception, no timeout)."`
}

// JSONSchemaExtend states the globals limits no struct tag can express.
func (PythonParams) JSONSchemaExtend(s *jsonschema.Schema) {
	g, ok := s.Properties.Get("globals")
	if !ok {
		return
	}
	g.MaxProperties = uintPtr(64)
	g.PropertyNames = &jsonschema.Schema{Pattern: schema.EnvName, MaxLength: uintPtr(128)}
	g.AdditionalProperties = &jsonschema.Schema{Type: "string", MaxLength: uintPtr(48000)}
}

// Validate checks the values and names and normalises the paths.
func (p *PythonParams) Validate() error {
	for name, value := range p.Globals {
		if name == "reads" || strings.HasPrefix(name, "_") {
			return fmt.Errorf("globals.%s: the name is reserved", name)
		}
		if !json.Valid([]byte(value)) {
			return fmt.Errorf("globals.%s: %q is not JSON; encode the value (a string is \"\\\"text\\\"\")", name, truncateForMessage(value))
		}
	}
	for i := range p.Reads {
		c, err := cleanPath(fmt.Sprintf("reads[%d].path", i), p.Reads[i].Path, false)
		if err != nil {
			return err
		}
		p.Reads[i].Path = c
	}
	for i := range p.Writes {
		c, err := cleanPath(fmt.Sprintf("writes[%d].path", i), p.Writes[i].Path, false)
		if err != nil {
			return err
		}
		p.Writes[i].Path = c
		if p.Writes[i].Mode == "" {
			p.Writes[i].Mode = workspace.WriteCreate
		}
	}
	return nil
}

// PythonResult is evaluate_python's result.
type PythonResult struct {
	ValueRepr *string              `json:"value_repr" jsonschema:"oneof_type=string;null" jsonschema_description:"repr() of the final expression's value; null when there is none."`
	Stdout    string               `json:"stdout" jsonschema_description:"Standard output, at most 4096 characters, ending with [truncated] when cut."`
	Stderr    string               `json:"stderr" jsonschema_description:"Standard error (tracebacks), at most 4096 characters."`
	Globals   map[string]string    `json:"globals" jsonschema_description:"The variables after the run that JSON can encode, name to JSON; feed them back as globals."`
	Reads     []workspace.FileRef  `json:"reads" jsonschema_description:"The files loaded, with their sizes."`
	Writes    []PythonWriteOutcome `json:"writes" jsonschema_description:"What became of each requested write: applied, or why not."`
	Succeeded bool                 `json:"succeeded" jsonschema_description:"True when the code ran without an exception or a timeout."`
	TimedOut  bool                 `json:"timed_out" jsonschema_description:"True when the code was killed after 5 seconds."`
	DiskFull  string               `json:"disk_full,omitempty" jsonschema_description:"Set when the code ended with the workspace's disk or /tmp full (no space, or no inode): what takes the space and which call frees it."`
}

// PythonWriteOutcome is what became of one requested write.
type PythonWriteOutcome struct {
	Path      string `json:"path"`
	Mode      string `json:"mode"`
	SizeBytes int64  `json:"size_bytes"`
	Applied   bool   `json:"applied"`
	Error     string `json:"error,omitempty"`
}

// Text renders the value, the output and the writes.
func (r PythonResult) Text() string {
	var b strings.Builder
	switch {
	case r.TimedOut:
		b.WriteString("timed out after 5 s; the code was killed")
	case !r.Succeeded:
		b.WriteString("the code raised an exception (see stderr)")
	case r.ValueRepr != nil:
		b.WriteString(*r.ValueRepr)
	default:
		b.WriteString("ok (no value)")
	}
	if r.DiskFull != "" {
		fmt.Fprintf(&b, "\ndisk full: %s", r.DiskFull)
	}
	if r.Stdout != "" {
		fmt.Fprintf(&b, "\n--- stdout ---\n%s", strings.TrimSuffix(r.Stdout, "\n"))
	}
	if r.Stderr != "" {
		fmt.Fprintf(&b, "\n--- stderr ---\n%s", strings.TrimSuffix(r.Stderr, "\n"))
	}
	for _, w := range r.Writes {
		if w.Applied {
			fmt.Fprintf(&b, "\nwrote %s (%s, %d bytes)", w.Path, w.Mode, w.SizeBytes)
		} else {
			fmt.Fprintf(&b, "\ndid not write %s: %s", w.Path, w.Error)
		}
	}
	return b.String()
}

// PythonRunner is what evaluate_python takes of a session's workspace.
type PythonRunner interface {
	// Python runs code with python3 in the container.
	Python(ctx context.Context, req workspace.PythonRequest) (workspace.PythonResult, error)
}

// Python returns the evaluate_python tool.
func Python(workspaceFor WorkspaceFor) (server.ServerTool, error) {
	return build(workspaceFor, definition[PythonRunner, PythonParams, PythonResult]{
		name:  "evaluate_python",
		title: "Run Python code in the workspace container",
		description: "Run a short Python 3 program (at most 2000 characters) with python3 in the workspace container, in " +
			"/workspace, killed after 5 seconds. The final expression's repr is returned as value_repr, as in a REPL; stdout " +
			"and stderr keep 4096 characters each. globals sets variables first (name to JSON-encoded value); reads loads " +
			"files into the dict reads; writes are written only if the code succeeds, with {name} in their content replaced " +
			"by the variable's value. An exception or a syntax error is a normal result with the traceback in stderr. The " +
			"image must have python3; use podman_shell for anything longer.",
		annotations: annotate(false, true, false),
		tasks:       true,
		handle: func(ctx context.Context, ws PythonRunner, p PythonParams) (PythonResult, error) {
			req := workspace.PythonRequest{Code: p.Code, Globals: p.Globals, Timeout: pythonTimeout, Grace: DefaultGraceSeconds * time.Second, OutputChars: pythonOutputChars, Progress: progressFrom(ctx)}
			for _, r := range p.Reads {
				req.Reads = append(req.Reads, r.Path)
			}
			for _, w := range p.Writes {
				req.Writes = append(req.Writes, workspace.PythonWrite{Path: w.Path, Content: w.Content, Mode: w.Mode})
			}
			r, err := ws.Python(ctx, req)
			writes := make([]PythonWriteOutcome, len(r.Writes))
			for i, w := range r.Writes {
				writes[i] = PythonWriteOutcome{Path: w.Path, Mode: w.Mode, SizeBytes: w.SizeBytes, Applied: w.Applied, Error: w.Error}
			}
			return PythonResult{
				ValueRepr: r.ValueRepr, Stdout: r.Stdout, Stderr: r.Stderr, Globals: r.Globals,
				Reads: r.Reads, Writes: writes, Succeeded: r.Ok, TimedOut: r.TimedOut, DiskFull: workspace.DiskFullNote(r.DiskFull, "the code"),
			}, err
		},
	})
}

// truncateForMessage keeps error messages short when a value is huge.
func truncateForMessage(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Package devcontainer reads what a project folder says about the
// container it needs, before any language marker is looked at: a
// `.devcontainer/devcontainer.json` or `.devcontainer.json` (the Dev
// Container spec's fields wink-mcp honours, every other field named as
// ignored, and the ones that would weaken the sandbox refused by name),
// else a `Dockerfile` or `Containerfile` at the folder's root. It also
// packs a build context (Pack: bounded, .dockerignore honoured, no link
// out of the folder, hashed for the image cache) and checks a Dockerfile
// for instructions that would reach the network outside the egress
// allowlist (CheckDockerfile). It reads files only; it builds nothing.
package devcontainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Sources a Found comes from.
const (
	SourceDevcontainer = "devcontainer.json"
	SourceDockerfile   = "Dockerfile"
)

// Bounds of what a devcontainer.json may ask.
const (
	maxConfigBytes  = 1 << 20
	maxEnv          = 128
	maxCommandBytes = 16 << 10
	maxPorts        = 64
)

// Found is what a project folder says about its container.
type Found struct {
	// Source is SourceDevcontainer or SourceDockerfile.
	Source string
	// File is the file it was read from, relative to the folder, with
	// slashes.
	File string
	// Why says in one sentence why this was chosen.
	Why string
	// Image is the image to start from; "" when Dockerfile is set.
	Image string
	// Dockerfile and Context are the file to build and its build
	// context, relative to the folder, with slashes ("." for the folder).
	Dockerfile string
	Context    string
	// Env is set in the container (devcontainer.json's containerEnv).
	Env map[string]string
	// User is remoteUser as a numeric non-root "uid:gid"; "" for the
	// server's user.
	User string
	// PostCreate is postCreateCommand as one shell command; "" for none.
	PostCreate string
	// ForwardPorts are the ports the project says it serves.
	ForwardPorts []int
	// Ignored names each field that was read but not honoured, and why.
	Ignored []string
}

// ErrRefused is wrapped by the error of a devcontainer.json asking for
// what the sandbox never grants.
var ErrRefused = errors.New("refused: wink-mcp's hardening always wins")

// Read looks in dir for a devcontainer.json, then a Dockerfile or
// Containerfile at its root; it returns nil and no error when there is
// neither. A file that is there but malformed, or that asks for what
// the sandbox refuses, is an error naming the file and the field.
func Read(dir string) (*Found, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the project folder: %w", err)
	}
	defer root.Close()
	for _, name := range []string{".devcontainer/devcontainer.json", ".devcontainer.json"} {
		data, err := readSmall(root, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return parseConfig(root, name, data)
	}
	for _, name := range []string{"Dockerfile", "Containerfile"} {
		if info, err := root.Lstat(name); err == nil && info.Mode().IsRegular() {
			return &Found{Source: SourceDockerfile, File: name, Dockerfile: name, Context: ".",
				Why: "the folder has a " + name + " at its root and no devcontainer.json"}, nil
		}
	}
	return nil, nil
}

// readSmall reads name in root, refusing one over maxConfigBytes or that
// is not a regular file.
func readSmall(root *os.Root, name string) ([]byte, error) {
	info, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (a link or a folder); write the file itself", name)
	}
	if info.Size() > maxConfigBytes {
		return nil, fmt.Errorf("%s is %d bytes; the limit is %d", name, info.Size(), maxConfigBytes)
	}
	return root.ReadFile(name)
}

// config is the part of devcontainer.json wink-mcp honours.
type config struct {
	Image string `json:"image"`
	Build *struct {
		Dockerfile string `json:"dockerfile"`
		Context    string `json:"context"`
	} `json:"build"`
	ContainerEnv      map[string]string `json:"containerEnv"`
	RemoteUser        string            `json:"remoteUser"`
	PostCreateCommand json.RawMessage   `json:"postCreateCommand"`
	ForwardPorts      []json.RawMessage `json:"forwardPorts"`
}

// honoured are the top-level fields config reads.
var honoured = []string{"image", "build", "containerEnv", "remoteUser", "postCreateCommand", "forwardPorts"}

// refusedWhen are the fields that would weaken the sandbox, each with
// the test of a value that asks for it; another value is ignored.
var refusedWhen = map[string]func(json.RawMessage) bool{
	"privileged":  func(v json.RawMessage) bool { return string(v) == "true" },
	"capAdd":      nonEmpty,
	"runArgs":     nonEmpty,
	"mounts":      nonEmpty,
	"securityOpt": nonEmpty,
	"init": func(v json.RawMessage) bool {
		return string(v) != "false" && string(v) != "true" && string(v) != "null"
	},
}

func nonEmpty(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	return s != "[]" && s != "null" && s != `""` && s != "{}"
}

// parseConfig reads the devcontainer.json name, found in root.
func parseConfig(root *os.Root, name string, data []byte) (*Found, error) {
	plain, err := standardJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(plain, &fields); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON with comments: %w", name, err)
	}
	var refused []string
	for _, field := range slices.Sorted(maps.Keys(fields)) {
		if bad, ok := refusedWhen[field]; ok && bad(fields[field]) {
			refused = append(refused, field)
		}
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("%s asks for %s: %w (the container keeps every capability dropped, no privileges, "+
			"no host mounts but the ones the server was given, and its own init); remove the field(s) to use this file",
			name, strings.Join(refused, ", "), ErrRefused)
	}
	var c config
	if err := json.Unmarshal(plain, &c); err != nil {
		return nil, fmt.Errorf("%s: a field has the wrong type: %w", name, err)
	}
	f := &Found{Source: SourceDevcontainer, File: name, Image: strings.TrimSpace(c.Image)}
	for _, field := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(honoured, field) {
			if _, known := refusedWhen[field]; known {
				f.Ignored = append(f.Ignored, field+" (its value grants nothing; the sandbox's own is kept)")
				continue
			}
			f.Ignored = append(f.Ignored, field+" (not read by wink-mcp)")
		}
	}
	dir := path.Dir(name)
	if err := f.readBuild(root, name, dir, c); err != nil {
		return nil, err
	}
	if err := f.readEnv(name, c.ContainerEnv); err != nil {
		return nil, err
	}
	f.readUser(c.RemoteUser)
	if f.PostCreate, err = shellCommand(c.PostCreateCommand); err != nil {
		return nil, fmt.Errorf("%s: postCreateCommand: %w", name, err)
	}
	if f.ForwardPorts, err = ports(c.ForwardPorts); err != nil {
		return nil, fmt.Errorf("%s: forwardPorts: %w", name, err)
	}
	f.Why = "the folder has " + name
	return f, nil
}

// readBuild reads image, build.dockerfile and build.context: the last
// two relative to the folder of the file, and inside the project folder.
func (f *Found) readBuild(root *os.Root, name, dir string, c config) error {
	switch {
	case c.Build != nil && c.Build.Dockerfile != "" && f.Image != "":
		f.Ignored = append(f.Ignored, "image (build.dockerfile is built instead)")
		f.Image = ""
	case c.Build == nil || c.Build.Dockerfile == "":
		if f.Image == "" {
			return fmt.Errorf("%s names neither an image nor a build.dockerfile (dockerComposeFile is not supported); add one of them", name)
		}
		return nil
	}
	var err error
	if f.Dockerfile, err = inside(dir, c.Build.Dockerfile); err != nil {
		return fmt.Errorf("%s: build.dockerfile %q: %w", name, c.Build.Dockerfile, err)
	}
	context := c.Build.Context
	if context == "" {
		context = "."
	}
	if f.Context, err = inside(dir, context); err != nil {
		return fmt.Errorf("%s: build.context %q: %w", name, context, err)
	}
	if info, err := root.Lstat(f.Dockerfile); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("%s: build.dockerfile %q: %s is not a file in the folder", name, c.Build.Dockerfile, f.Dockerfile)
	}
	if f.Context != "." && !strings.HasPrefix(f.Dockerfile, f.Context+"/") {
		return fmt.Errorf("%s: build.dockerfile %s is outside build.context %s; put the Dockerfile in its context", name, f.Dockerfile, f.Context)
	}
	return nil
}

// inside is rel, relative to dir, as a clean slash path in the folder.
func inside(dir, rel string) (string, error) {
	if path.IsAbs(rel) || filepath.IsAbs(rel) {
		return "", errors.New("is absolute; give a path relative to the file")
	}
	p := path.Clean(path.Join(dir, filepath.ToSlash(rel)))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", errors.New("leads out of the project folder")
	}
	return p, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readEnv reads containerEnv. A value naming the host's environment
// (${localEnv:...}) is left out: the host's variables never enter the
// container unless the server was told to pass them.
func (f *Found) readEnv(name string, env map[string]string) error {
	if len(env) > maxEnv {
		return fmt.Errorf("%s: containerEnv has %d variables; the limit is %d", name, len(env), maxEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		switch {
		case !envName.MatchString(k):
			return fmt.Errorf("%s: containerEnv: %q is not a variable name (letters, digits and _)", name, k)
		case strings.Contains(v, "${"):
			f.Ignored = append(f.Ignored, "containerEnv."+k+" (its ${...} would read the host's or the container's environment)")
			continue
		case strings.ContainsRune(v, 0) || len(v) > maxCommandBytes:
			return fmt.Errorf("%s: containerEnv.%s holds a NUL byte or is over %d bytes", name, k, maxCommandBytes)
		}
		if f.Env == nil {
			f.Env = map[string]string{}
		}
		f.Env[k] = v
	}
	return nil
}

// readUser honours remoteUser only as a numeric, non-root user.
func (f *Found) readUser(user string) {
	user = strings.TrimSpace(user)
	if user == "" {
		return
	}
	uid, gid, hasGID := strings.Cut(user, ":")
	if !hasGID {
		gid = uid
	}
	u, errU := strconv.ParseUint(uid, 10, 32)
	_, errG := strconv.ParseUint(gid, 10, 32)
	switch {
	case user == "root" || errU == nil && u == 0:
		f.Ignored = append(f.Ignored, "remoteUser (root: the workspace never runs as root)")
	case errU != nil || errG != nil:
		f.Ignored = append(f.Ignored, "remoteUser ("+strconv.Quote(user)+" is a name; names are not resolved inside the image: give a numeric uid:gid)")
	default:
		f.User = uid + ":" + gid
	}
}

// shellCommand is a lifecycle command (a string, an array of arguments,
// or an object of named commands, run one after the other in name
// order) as one shell command.
func shellCommand(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var cmd string
	var s string
	var argv []string
	var named map[string]json.RawMessage
	switch {
	case json.Unmarshal(raw, &s) == nil:
		cmd = s
	case json.Unmarshal(raw, &argv) == nil:
		cmd = quoteArgs(argv)
	case json.Unmarshal(raw, &named) == nil:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(named)) {
			part, err := shellCommand(named[k])
			if err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
			if part != "" {
				parts = append(parts, "("+part+")")
			}
		}
		cmd = strings.Join(parts, " && ")
	default:
		return "", errors.New("must be a string, an array of strings or an object of them")
	}
	if len(cmd) > maxCommandBytes || strings.ContainsRune(cmd, 0) {
		return "", fmt.Errorf("is over %d bytes or holds a NUL byte", maxCommandBytes)
	}
	return cmd, nil
}

func quoteArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// ports reads forwardPorts: numbers, or "host:port" strings whose port
// is kept.
func ports(raw []json.RawMessage) ([]int, error) {
	if len(raw) > maxPorts {
		return nil, fmt.Errorf("has %d entries; the limit is %d", len(raw), maxPorts)
	}
	var out []int
	for _, r := range raw {
		var n int
		var s string
		switch {
		case json.Unmarshal(r, &n) == nil:
		case json.Unmarshal(r, &s) == nil:
			_, p, _ := strings.Cut(s, ":")
			var err error
			if n, err = strconv.Atoi(p); err != nil {
				return nil, fmt.Errorf("%q is neither a port nor host:port", s)
			}
		default:
			return nil, fmt.Errorf("%s is neither a port nor host:port", r)
		}
		if n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %d is outside 1-65535", n)
		}
		out = append(out, n)
	}
	return out, nil
}

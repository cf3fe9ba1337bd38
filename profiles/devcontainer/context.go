package devcontainer

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/glob"
)

// Default bounds of a build context.
const (
	DefaultMaxContextBytes = 256 << 20
	DefaultMaxContextFiles = 20000
)

// ContextLimits bound a build context; a zero field takes its default.
type ContextLimits struct {
	MaxBytes int64
	MaxFiles int
}

// Packed is a build context written as a tar archive.
type Packed struct {
	// Hash is the SHA-256, in hex, of the archive: the same files, modes
	// and links give the same hash, whatever their times or owners.
	Hash string
	// Files and Bytes are what the archive holds.
	Files int
	Bytes int64
}

// ErrContextTooBig is wrapped by the error of a context over its limits.
var ErrContextTooBig = errors.New("the build context is too big")

// Pack writes the build context dir/context to w as a tar archive, in
// name order, with times and owners zeroed: the entries its
// .dockerignore (or .containerignore) keeps, the ignore files and the
// Dockerfile (dockerfile, relative to the context) always. A
// symbolic link whose target leads out of the context, a device, a
// socket or a pipe is refused by name; so is a context over limits.
// Links are never followed.
func Pack(dir, context, dockerfile string, limits ContextLimits, w io.Writer) (Packed, error) {
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultMaxContextBytes
	}
	if limits.MaxFiles <= 0 {
		limits.MaxFiles = DefaultMaxContextFiles
	}
	root, err := os.OpenRoot(filepath.Join(dir, filepath.FromSlash(context)))
	if err != nil {
		return Packed{}, fmt.Errorf("opening the build context %s: %w", context, err)
	}
	defer root.Close()
	ignore, err := readIgnore(root)
	if err != nil {
		return Packed{}, err
	}
	sum := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(w, sum))
	var packed Packed
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s in the build context: %w", name, err)
		}
		if name == "." {
			return nil
		}
		if ignore.excludes(name) && !slices.Contains([]string{".dockerignore", ".containerignore", dockerfile}, name) &&
			!strings.HasPrefix(dockerfile, name+"/") {
			if d.IsDir() && !ignore.negates {
				return fs.SkipDir
			}
			return nil
		}
		packed.Files++
		if packed.Files > limits.MaxFiles {
			return fmt.Errorf("%w: over %d files (at %s); list what the image does not need in .dockerignore", ErrContextTooBig, limits.MaxFiles, name)
		}
		return packed.add(tw, root, name, limits.MaxBytes)
	})
	if err != nil {
		return Packed{}, err
	}
	if err := tw.Close(); err != nil {
		return Packed{}, fmt.Errorf("writing the build context: %w", err)
	}
	packed.Hash = hex.EncodeToString(sum.Sum(nil))
	return packed, nil
}

// add writes the entry name of root to tw.
func (p *Packed) add(tw *tar.Writer, root *os.Root, name string, maxBytes int64) error {
	info, err := root.Lstat(name)
	if err != nil {
		return fmt.Errorf("reading %s in the build context: %w", name, err)
	}
	hdr := &tar.Header{Name: name, Mode: int64(info.Mode().Perm()), Format: tar.FormatPAX}
	switch mode := info.Mode(); {
	case mode.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
	case mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(name)
		if err != nil {
			return fmt.Errorf("reading the link %s in the build context: %w", name, err)
		}
		if escapes(name, target) {
			return fmt.Errorf("%s in the build context is a link to %s, outside the context; copy the file in, or list the link in .dockerignore", name, target)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	case mode.IsRegular():
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		p.Bytes += info.Size()
		if p.Bytes > maxBytes {
			return fmt.Errorf("%w: over %d bytes (at %s); list what the image does not need in .dockerignore", ErrContextTooBig, maxBytes, name)
		}
	default:
		return fmt.Errorf("%s in the build context is a %s, which a build context cannot hold; list it in .dockerignore", name, mode.Type())
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing the build context: %w", err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := root.Open(name)
	if err != nil {
		return fmt.Errorf("reading %s in the build context: %w", name, err)
	}
	defer f.Close()
	// The size was read before: a file that grows is cut there, one that
	// shrinks fails the copy, and neither goes unnoticed.
	if n, err := io.Copy(tw, io.LimitReader(f, hdr.Size)); err != nil || n != hdr.Size {
		return fmt.Errorf("reading %s in the build context: it changed while it was read (%d of %d bytes): %v", name, n, hdr.Size, err)
	}
	return nil
}

// escapes says whether a link at name to target leads out of the
// context.
func escapes(name, target string) bool {
	if path.IsAbs(target) || filepath.IsAbs(target) {
		return true
	}
	p := path.Clean(path.Join(path.Dir(name), filepath.ToSlash(target)))
	return p == ".." || strings.HasPrefix(p, "../")
}

// ignoreRules are a .dockerignore's patterns, in order.
type ignoreRules struct {
	rules []ignoreRule
	// negates says whether a rule keeps ("!") what another excludes, so
	// an excluded folder must still be walked.
	negates bool
}

type ignoreRule struct {
	pattern *glob.Pattern
	keep    bool
}

// readIgnore reads root's .dockerignore, else its .containerignore.
func readIgnore(root *os.Root) (ignoreRules, error) {
	var rules ignoreRules
	for _, name := range []string{".dockerignore", ".containerignore"} {
		data, err := readSmall(root, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return rules, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			keep := strings.HasPrefix(text, "!")
			text = strings.TrimPrefix(strings.TrimPrefix(text, "!"), "/")
			p, err := glob.Compile(path.Clean(text))
			if err != nil {
				return rules, fmt.Errorf("%s line %d (%q): %w", name, line, sc.Text(), err)
			}
			rules.rules = append(rules.rules, ignoreRule{p, keep})
			rules.negates = rules.negates || keep
		}
		return rules, nil
	}
	return rules, nil
}

// excludes says whether name is left out: the last rule that matches it
// or a folder above it decides.
func (r ignoreRules) excludes(name string) bool {
	excluded := false
	for _, rule := range r.rules {
		for p := name; p != "." && p != "/"; p = path.Dir(p) {
			if rule.pattern.Match(p) {
				excluded = !rule.keep
				break
			}
		}
	}
	return excluded
}

// CheckDockerfile refuses the instructions of a Dockerfile that would
// reach the network around the egress allowlist: an ADD of a URL or a
// git repository (the engine fetches it itself), and a RUN that asks for
// another network or for insecure privileges. name is for the message.
func CheckDockerfile(name string, data []byte) error {
	for _, ins := range instructions(data) {
		fields := strings.Fields(ins.text)
		if len(fields) == 0 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "ADD":
			for _, f := range fields[1:] {
				lower := strings.ToLower(strings.Trim(f, `"[],`))
				if strings.Contains(lower, "://") || strings.HasPrefix(lower, "git@") {
					return fmt.Errorf("%s line %d: ADD %s: the engine would fetch it outside the egress allowlist; "+
						"download it in a RUN step (curl or wget through the allowlist) instead", name, ins.line, f)
				}
			}
		case "RUN":
			for _, f := range fields[1:] {
				if strings.HasPrefix(f, "--network") || strings.HasPrefix(f, "--security") {
					return fmt.Errorf("%s line %d: RUN %s: a build step gets no network but the egress proxy, and no privileges; remove the option", name, ins.line, f)
				}
				if !strings.HasPrefix(f, "--") {
					break
				}
			}
		}
	}
	return nil
}

// instruction is one Dockerfile instruction, its continuation lines
// joined, and the line it starts on.
type instruction struct {
	text string
	line int
}

func instructions(data []byte) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, instruction{cur.String(), start})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, instruction{cur.String(), start})
	}
	return out
}

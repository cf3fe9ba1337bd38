//go:build linux

package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/wink-mcp/wink-mcp/glob"
	"github.com/wink-mcp/wink-mcp/wire"
)

// errStop ends a walk early.
var errStop = errors.New("stop walking")

// list answers OpList: the entries of a directory, or the one entry of a
// file. Entries are described with lstat relative to the directory opened
// inside the root, so a directory swapped for a symlink mid-listing cannot
// show anything from outside the workspace.
func (ops *fileOps) list(p string) (*wire.ListResult, *wire.Error) {
	fi, err := ops.root.Lstat(rel(p))
	if err != nil {
		return nil, pathError(p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A link to a directory inside the workspace lists that directory.
		if target, err := ops.root.Stat(p); err == nil && target.IsDir() {
			fi = target
		}
	}
	if !fi.IsDir() {
		e := ops.entry(ops.root, p, path.Base(p), fi)
		return &wire.ListResult{Path: p, Entries: []wire.Entry{e}, Total: 1}, nil
	}
	dir, err := ops.root.OpenRoot(rel(p))
	if err != nil {
		return nil, pathError(p, err)
	}
	defer dir.Close()
	f, err := dir.Open(".")
	if err != nil {
		return nil, pathError(p, err)
	}
	defer f.Close()
	var names []string
	for len(names) <= wire.MaxWalkEntries {
		batch, err := f.Readdirnames(1024)
		names = append(names, batch...)
		if err != nil {
			break
		}
	}
	res := &wire.ListResult{Path: p, Total: len(names)}
	for _, name := range names {
		info, err := dir.Lstat(name)
		if err != nil {
			continue // removed while listing
		}
		res.Entries = append(res.Entries, ops.entry(dir, path.Join(p, name), name, info))
	}
	slices.SortFunc(res.Entries, func(x, y wire.Entry) int {
		if dx, dy := x.Kind == wire.KindDirectory, y.Kind == wire.KindDirectory; dx != dy {
			if dx {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Name, y.Name)
	})
	if len(res.Entries) > wire.MaxResults {
		res.Entries, res.Truncated = res.Entries[:wire.MaxResults], true
	}
	if len(names) > wire.MaxWalkEntries {
		res.Truncated = true
	}
	return res, nil
}

// entry describes one file; dir is the root its name is relative to.
func (ops *fileOps) entry(dir *os.Root, p, name string, fi fs.FileInfo) wire.Entry {
	e := wire.Entry{
		Name:      strings.ToValidUTF8(name, "\uFFFD"),
		Path:      strings.ToValidUTF8(p, "\uFFFD"),
		Kind:      kindOf(fi.Mode()),
		SizeBytes: fi.Size(),
		Modified:  fi.ModTime().UTC(),
	}
	if e.Kind == wire.KindSymlink {
		if target, err := dir.Readlink(name); err == nil {
			e.LinkTarget = strings.ToValidUTF8(target, "\uFFFD")
		}
	}
	return e
}

// walkFiles calls visit for every regular file under base (a directory, or
// one file), in path order, without following symlinks, visiting at most
// wire.MaxWalkEntries entries. maxDepth (-1 for none) prunes deeper
// directories. It reports whether the walk stopped at the entry limit.
func (ops *fileOps) walkFiles(base string, maxDepth int, visit func(p string, d fs.DirEntry) error) (bool, *wire.Error) {
	fi, err := ops.root.Stat(rel(base))
	if err != nil {
		return false, pathError(base, err)
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return false, wire.Errorf(wire.CodeInvalid, "%q is not a regular file or a directory", base)
		}
		err := visit(base, fs.FileInfoToDirEntry(fi))
		if err != nil && !errors.Is(err, errStop) {
			return false, pathError(base, err)
		}
		return false, nil
	}
	visited, capped := 0, false
	err = fs.WalkDir(ops.root.FS(), rel(base), func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == rel(base) {
			return nil // unreadable entries are skipped, not fatal
		}
		if visited++; visited > wire.MaxWalkEntries {
			capped = true
			return errStop
		}
		if d.IsDir() {
			depth := strings.Count(p, "/") + 1
			if base != "" {
				depth -= strings.Count(base, "/") + 1
			}
			if maxDepth >= 0 && depth >= maxDepth {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return visit(p, d)
	})
	if err != nil && !errors.Is(err, errStop) {
		return capped, pathError(base, err)
	}
	return capped, nil
}

// glob answers OpGlob.
func (ops *fileOps) glob(args wire.GlobArgs) (*wire.GlobResult, *wire.Error) {
	pattern, err := glob.Compile(args.Pattern)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalid, "pattern %q: %v", args.Pattern, err)
	}
	res := &wire.GlobResult{Matches: []wire.GlobMatch{}}
	prefix := strings.TrimPrefix(rel(args.Path)+"/", "./")
	capped, werr := ops.walkFiles(args.Path, pattern.MaxDepth(), func(p string, d fs.DirEntry) error {
		if !pattern.Match(strings.TrimPrefix(p, prefix)) {
			return nil
		}
		if len(res.Matches) == wire.MaxResults {
			res.Truncated = true
			return errStop
		}
		var size int64
		if info, err := d.Info(); err == nil {
			size = info.Size()
		}
		res.Matches = append(res.Matches, wire.GlobMatch{Path: p, SizeBytes: size})
		return nil
	})
	if werr != nil {
		return nil, werr
	}
	res.Truncated, res.Note = truncation(res.Truncated, capped, "the pattern or the path")
	return res, nil
}

// grep answers OpGrep. Files that are not UTF-8 text, or larger than
// wire.MaxFileBytes, are skipped and counted.
func (ops *fileOps) grep(args wire.GrepArgs) (*wire.GrepResult, *wire.Error) {
	re, err := regexp.Compile(args.Pattern)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalid, "pattern %q is not a valid RE2 regular expression: %v (RE2 has no backreferences or lookaround)", args.Pattern, err)
	}
	var nameGlob *glob.Pattern
	if args.Glob != "" {
		if nameGlob, err = glob.Compile(args.Glob); err != nil {
			return nil, wire.Errorf(wire.CodeInvalid, "glob %q: %v", args.Glob, err)
		}
	}
	res := &wire.GrepResult{Matches: []wire.GrepMatch{}}
	prefix := strings.TrimPrefix(rel(args.Path)+"/", "./")
	capped, werr := ops.walkFiles(args.Path, -1, func(p string, _ fs.DirEntry) error {
		if nameGlob != nil {
			name := path.Base(p)
			if nameGlob.HasSlash() {
				name = strings.TrimPrefix(p, prefix)
			}
			if !nameGlob.Match(name) {
				return nil
			}
		}
		data, ok := ops.loadForGrep(p)
		if !ok {
			res.FilesSkipped++
			return nil
		}
		res.FilesSearched++
		for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			line = strings.TrimSuffix(line, "\r")
			if !re.MatchString(line) {
				continue
			}
			if len(res.Matches) == wire.MaxResults {
				res.Truncated = true
				return errStop
			}
			res.Matches = append(res.Matches, wire.GrepMatch{Path: p, LineNumber: i + 1, Line: cutLine(line, wire.MaxGrepLineChars)})
		}
		return nil
	})
	if werr != nil {
		return nil, werr
	}
	res.Truncated, res.Note = truncation(res.Truncated, capped, "the pattern, the path or the glob")
	return res, nil
}

// truncation says whether a search's result is cut short, and why: too many
// matches (narrow what) or too many entries visited.
func truncation(tooManyMatches, walkCapped bool, what string) (bool, string) {
	switch {
	case tooManyMatches:
		return true, fmt.Sprintf("only the first %d matches are listed; narrow %s", wire.MaxResults, what)
	case walkCapped:
		return true, fmt.Sprintf("the search stopped after visiting %d entries; narrow the path", wire.MaxWalkEntries)
	}
	return false, ""
}

// loadForGrep reads a file to search, or reports false for one to skip: not
// a regular file when opened, too large, or binary (NUL bytes or not UTF-8).
func (ops *fileOps) loadForGrep(p string) ([]byte, bool) {
	f, err := ops.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > wire.MaxFileBytes {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, wire.MaxFileBytes+1))
	if err != nil || len(data) > wire.MaxFileBytes || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, false
	}
	return data, true
}

// cutLine shortens a line to n characters, marking the cut.
func cutLine(line string, n int) string {
	if utf8.RuneCountInString(line) <= n {
		return line
	}
	return string([]rune(line)[:n]) + "…"
}

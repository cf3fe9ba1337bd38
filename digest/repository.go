package digest

import (
	"bufio"
	"bytes"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// maxGitConfig bounds what is read of a .git/config or .git file.
const maxGitConfig = 64 << 10

// Repository names the repository a host folder holds: "git REMOTE PATH"
// when the folder is in a git work tree whose remote "origin" is set
// (REMOTE without any user name or password in it, PATH the folder's
// path in the work tree, "." at its top), else "path FOLDER", the
// folder's absolute, clean path. Two clones of one repository share a
// name; a folder moved on disk keeps its name when it has a remote.
func Repository(folder string) string {
	folder = filepath.Clean(folder)
	for dir := folder; ; dir = filepath.Dir(dir) {
		if remote, ok := originOf(dir); ok {
			rel, err := filepath.Rel(dir, folder)
			if err != nil {
				break
			}
			return shown("git " + remote + " " + filepath.ToSlash(rel))
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil || dir == filepath.Dir(dir) {
			break // a work tree without a remote, or the root
		}
	}
	return shown("path " + folder)
}

// originOf returns the remote "origin" of the work tree at dir, if dir
// holds a .git directory (or a .git file naming one) whose config sets it.
func originOf(dir string) (string, bool) {
	gitDir := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return "", false
	}
	if fi.Mode().IsRegular() {
		// A worktree or submodule: "gitdir: PATH"; its config is in the
		// common directory when the gitdir names one.
		b, err := readBounded(gitDir)
		if err != nil {
			return "", false
		}
		target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return "", false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		gitDir = target
		if common, err := readBounded(filepath.Join(gitDir, "commondir")); err == nil {
			c := strings.TrimSpace(string(common))
			if !filepath.IsAbs(c) {
				c = filepath.Join(gitDir, c)
			}
			gitDir = c
		}
	} else if !fi.IsDir() {
		return "", false
	}
	b, err := readBounded(filepath.Join(gitDir, "config"))
	if err != nil {
		return "", false
	}
	remote := originURL(b)
	return remote, remote != ""
}

var (
	sectionRE = regexp.MustCompile(`^\[\s*remote\s+"origin"\s*\]`)
	urlRE     = regexp.MustCompile(`^url\s*=\s*(.+)$`)
)

// originURL returns the url of [remote "origin"] in a git config,
// without credentials or a trailing ".git" or "/".
func originURL(config []byte) string {
	in := false
	sc := bufio.NewScanner(bytes.NewReader(config))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			in = sectionRE.MatchString(line)
			continue
		}
		if m := urlRE.FindStringSubmatch(line); in && m != nil {
			return cleanRemote(strings.Trim(strings.TrimSpace(m[1]), `"`))
		}
	}
	return ""
}

// cleanRemote drops what identifies a user rather than the repository:
// a URL's user name and password (a token written into a remote), its
// query; and a trailing ".git" or "/".
func cleanRemote(remote string) string {
	if u, err := url.Parse(remote); err == nil && u.Scheme != "" && u.Host != "" {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		remote = u.String()
	} else if at := strings.Index(remote, "@"); at >= 0 && strings.Contains(remote[at:], ":") {
		remote = remote[at+1:] // scp-like user@host:path
	}
	remote = strings.TrimSuffix(strings.TrimSuffix(remote, "/"), ".git")
	return remote
}

// readBounded reads at most maxGitConfig bytes of a regular file.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxGitConfig))
}

// Package repo reads a repository a session starts with (--repo
// URL[#REF]) and says how it is cloned: the URL and ref are checked
// here, and the clone is a list of argument vectors run without a shell,
// so neither can become a command or a git option.
package repo

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Bounds of a repository's spec.
const (
	MaxURLBytes = 2048
	MaxRefBytes = 255
)

// Repo is a repository to clone into the workspace.
type Repo struct {
	// URL is the https URL of the repository.
	URL string
	// Host is URL's host (and port, when it names one): what the egress
	// allowlist must let the clone reach.
	Host string
	// Ref is the branch, tag or commit to check out ("" for the remote's
	// default branch).
	Ref string
	// Dir is the folder under /workspace it is cloned into: the URL's last
	// path segment without .git.
	Dir string
}

var (
	refPattern = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)
	dirPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,80}$`)
)

// Parse checks spec, URL[#REF], and returns the repository. Only https
// URLs are taken (the clone goes through the egress proxy, and git's
// other transports can run commands); a user name or password in the URL
// is refused (a private repository's token goes in the credentials file,
// which the proxy adds). Every error names what was wrong, the limit, and
// what to do.
func Parse(spec string) (Repo, error) {
	raw, ref, _ := strings.Cut(spec, "#")
	if raw == "" {
		return Repo{}, errors.New("no URL: give https://HOST/PATH[#REF]")
	}
	if len(raw) > MaxURLBytes {
		return Repo{}, fmt.Errorf("the URL is %d bytes; at most %d", len(raw), MaxURLBytes)
	}
	for _, r := range spec {
		if r <= ' ' || r == 0x7f || r > 0x7e {
			return Repo{}, fmt.Errorf("%q holds a space, a control or a non-ASCII character; percent-encode it in the URL", spec)
		}
	}
	if !strings.HasPrefix(raw, "https://") {
		return Repo{}, fmt.Errorf("%q: only https:// URLs are cloned (through the egress proxy); for ssh or git@HOST:PATH, clone in the session with --ssh-agent", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Repo{}, fmt.Errorf("the URL: %w", err)
	}
	switch {
	case u.User != nil:
		return Repo{}, fmt.Errorf("%q: a user or token in the URL is refused, since the model could read it; put the host's token in --credentials, which the proxy adds", redact(u))
	case u.Hostname() == "":
		return Repo{}, fmt.Errorf("%q has no host", raw)
	case u.RawQuery != "" || u.ForceQuery:
		return Repo{}, fmt.Errorf("%q: a query is not part of a repository's URL; drop it", raw)
	case u.Opaque != "":
		return Repo{}, fmt.Errorf("%q: want https://HOST/PATH", raw)
	}
	dir := strings.TrimSuffix(path.Base(path.Clean("/"+u.Path)), ".git")
	if !dirPattern.MatchString(dir) || dir == "." || dir == ".." {
		return Repo{}, fmt.Errorf("%q: its path does not end in a repository name (letters, digits, '.', '_', '-', at most 80) to clone into; give https://HOST/OWNER/NAME", raw)
	}
	if err := checkRef(ref); err != nil {
		return Repo{}, fmt.Errorf("ref %q: %w", ref, err)
	}
	return Repo{URL: raw, Host: u.Host, Ref: ref, Dir: dir}, nil
}

// checkRef checks a ref as git check-ref-format would, and more
// narrowly: it may not start with '-', so that git never reads it as an
// option.
func checkRef(ref string) error {
	switch {
	case ref == "":
		return nil
	case len(ref) > MaxRefBytes:
		return fmt.Errorf("%d bytes; at most %d", len(ref), MaxRefBytes)
	case !refPattern.MatchString(ref):
		return errors.New("a branch, tag or commit has only letters, digits and . _ / + -")
	case strings.HasPrefix(ref, "-"), strings.HasPrefix(ref, "/"), strings.HasSuffix(ref, "/"), strings.HasSuffix(ref, "."),
		strings.Contains(ref, ".."), strings.Contains(ref, "//"), strings.HasSuffix(ref, ".lock"), strings.Contains(ref, "/."):
		return errors.New("not a valid branch, tag or commit name (no leading '-' or '/', no '..', '//', '/.', trailing '/', '.' or '.lock')")
	}
	return nil
}

// redact is u without its password, for messages.
func redact(u *url.URL) string {
	c := *u
	c.User = url.User("…")
	return c.String()
}

// Steps are the commands that clone r into dir (relative to the
// workspace's root): argument vectors, run without a shell. The URL and
// the folder come after "--", and the ref only after a check that it
// starts with no '-' (Parse), so that neither is read as an option.
func (r Repo) Steps() [][]string {
	steps := [][]string{{"git", "-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "clone", "--quiet", "--no-checkout", "--", r.URL, r.Dir}}
	ref := r.Ref
	if ref == "" {
		ref = "HEAD"
	}
	return append(steps, []string{"git", "-C", r.Dir, "checkout", "--quiet", ref, "--"})
}

// String is the spec r was read from.
func (r Repo) String() string {
	if r.Ref == "" {
		return r.URL
	}
	return r.URL + "#" + r.Ref
}

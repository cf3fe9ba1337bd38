package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"strings"

	"github.com/wink-mcp/wink-mcp/hostcmd"
)

// GitIdentity is the git user.name and user.email given to every
// container (--git-identity), so that commits made there carry the user's
// name. Nothing else of this machine's git configuration goes with it.
type GitIdentity struct {
	Name, Email string
}

// env gives the identity as git configuration through the environment
// (GIT_CONFIG_COUNT, git 2.31 and later), which `git config` reads like a
// file's: no file in the container, nothing for a command to overwrite
// for the next one.
func (g *GitIdentity) env() map[string]string {
	if g == nil {
		return nil
	}
	return map[string]string{
		"GIT_CONFIG_COUNT": "2",
		"GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": g.Name,
		"GIT_CONFIG_KEY_1": "user.email", "GIT_CONFIG_VALUE_1": g.Email,
	}
}

// ReadGitIdentity reads user.name and user.email from this machine's git
// configuration, as `git config` in the current directory resolves them.
func ReadGitIdentity(ctx context.Context) (*GitIdentity, error) {
	get := func(key string) (string, error) {
		out, err := hostcmd.Command(ctx, "git", hostcmd.GitConfig, "config", "--get", key).Output()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			return "", fmt.Errorf("--git-identity: %s is not set in this machine's git configuration; set it with git config --global %s VALUE", key, key)
		case err != nil:
			return "", fmt.Errorf("--git-identity: reading %s with git: %w", key, err)
		}
		v := strings.TrimSpace(string(out))
		if v == "" || strings.ContainsAny(v, "\x00\n") {
			return "", fmt.Errorf("--git-identity: %s is empty or spans lines", key)
		}
		return v, nil
	}
	name, err := get("user.name")
	if err != nil {
		return nil, err
	}
	email, err := get("user.email")
	if err != nil {
		return nil, err
	}
	return &GitIdentity{Name: name, Email: email}, nil
}

// unpassed are variables --env-pass never passes, whatever its patterns:
// they describe this machine's process, not a setting for the container
// (PATH would break every command), or the container's egress and git
// identity are set through them, or they are wink-mcp's own settings,
// bearer tokens among them.
var unpassed = regexp.MustCompile(`^(PATH|HOME|PWD|OLDPWD|SHELL|USER|LOGNAME|HOSTNAME|SHLVL|TERM|TMPDIR|_|` +
	`(?i:https?_proxy|no_proxy|all_proxy)|XDG_.*|WINK_.*|GIT_CONFIG_.*)$`)

var envPatternForm = regexp.MustCompile(`^[A-Za-z0-9_*?]{1,128}$`)

// PassEnv returns the variables of environ ("NAME=value") whose names
// match one of patterns (`*` and `?` globs), except the unpassed ones.
func PassEnv(patterns, environ []string) (map[string]string, error) {
	for _, p := range patterns {
		if !envPatternForm.MatchString(p) {
			return nil, fmt.Errorf("--env-pass %q: a pattern is a variable name in which * and ? match any characters, such as NPM_TOKEN or AWS_*", p)
		}
	}
	passed := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || unpassed.MatchString(name) || strings.ContainsRune(value, 0) {
			continue
		}
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok {
				passed[name] = value
				break
			}
		}
	}
	return passed, nil
}

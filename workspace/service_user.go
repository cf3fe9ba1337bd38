package workspace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace/services"
)

// passwdLimit bounds how much of an image's /etc/passwd is read.
const passwdLimit = 256 << 10

// imageUser returns the uid:gid of spec.User in the image of profile p,
// read once per profile and user from the image's /etc/passwd in a
// container of the workspace's user (removed after), and refused when it
// is missing or is root's (uid or gid 0).
func (mk serviceMaker) imageUser(ctx context.Context, spec services.Spec, p *profiles.Profile) (string, error) {
	key := p.Name + "\x00" + p.ImageKey("") + "\x00" + spec.User
	if ids, ok := mk.s.m.serviceUsers.Load(key); ok {
		return ids.(string), nil
	}
	probe, err := mk.start(ctx, services.Spec{Name: spec.Name}, p, "") // no egress either
	if err != nil {
		return "", err
	}
	defer probe.End(context.WithoutCancel(ctx))
	res, err := probe.s.Exec(ctx, ExecRequest{Argv: []string{"cat", "/etc/passwd"}, Timeout: 30 * time.Second, Grace: time.Second,
		Capture: true, OutputLimit: passwdLimit})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("cat /etc/passwd exited %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	if err != nil {
		return "", fmt.Errorf("user: reading the users of profile %s's image: %w", p.Name, err)
	}
	ids, err := passwdIDs(res.Stdout, spec.User)
	if err != nil {
		return "", fmt.Errorf("user: profile %s's image: %w", p.Name, err)
	}
	mk.s.m.serviceUsers.Store(key, ids)
	return ids, nil
}

// passwdIDs returns the uid:gid of name in the passwd file text, refusing
// root's ids.
func passwdIDs(text, name string) (string, error) {
	for line := range strings.Lines(text) {
		f := strings.Split(strings.TrimRight(line, "\r\n"), ":")
		if len(f) < 4 || f[0] != name {
			continue
		}
		uid, errU := strconv.ParseUint(f[2], 10, 32)
		gid, errG := strconv.ParseUint(f[3], 10, 32)
		switch {
		case errU != nil || errG != nil:
			return "", fmt.Errorf("%q has ids %q:%q, not numbers", name, f[2], f[3])
		case uid == 0 || gid == 0:
			return "", fmt.Errorf("%q has uid %d and gid %d: a service never runs as root (uid or gid 0); choose another user", name, uid, gid)
		}
		return fmt.Sprintf("%d:%d", uid, gid), nil
	}
	return "", fmt.Errorf("no user %q in its /etc/passwd; the profile's setup can add one (useradd)", name)
}

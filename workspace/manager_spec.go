package workspace

import (
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/wink-mcp/wink-mcp/engine"
)

// spec describes the container of session s, run as user.
func (m *Manager) spec(s *Session, host engine.HostFacts, user string, keepID bool) engine.Spec {
	spec := engine.Spec{
		SELinux:     host.SELinux,
		Name:        s.name,
		Image:       s.image,
		Labels:      s.labels(),
		User:        user,
		KeepID:      keepID,
		Root:        Root,
		AgentBinary: m.agentBinary,
		Limits:      profileLimits(m.cfg.Limits, s.profile),
		Unlimited:   host.Unlimitable,
		Env:         containerEnv(&m.cfg, s.profile, s.proxy != nil),
	}
	if m.cfg.FilesOnEngineHost {
		spec.WorkspaceVolume, spec.CopyAgent = s.name, true
		if s.kept != nil && s.kept.held != nil {
			spec.WorkspaceVolume, spec.KeptWorkspace = s.kept.held.Volume, s.kept.name
		}
	} else {
		spec.WorkspaceDir = s.workspaceDir()
	}
	if s.setupBase != "" {
		setupSpec(&spec, s)
	} else {
		spec.CDIDevices = sessionDevices(m.cfg.CDIDevices, s.profile)
	}
	// After every other variable: a placeholder hides a value --env-pass
	// would show.
	if env := mergedEnv(m.trust.env(profileName(s.profile), s.setupBase != ""), m.ssh.env(s.setupBase != "")); len(env) > 0 {
		spec.Env = maps.Clone(spec.Env) // a setup's is its profile's own map
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		maps.Copy(spec.Env, env)
	}
	spec.Mounts = append(spec.Mounts, m.trust.mounts(profileName(s.profile))...)
	spec.Mounts = append(spec.Mounts, m.ssh.mounts(s.setupBase != "")...)
	for _, mt := range s.mounts.list {
		if mt.Mode == MountCopy {
			continue
		}
		source := mt.HostPath
		if mt.Mode == MountOverlay {
			source = mt.Lower() // see mounts.Mounted.Lower
		}
		spec.Mounts = append(spec.Mounts, engine.Mount{Source: source, Destination: Root + "/" + mt.Path,
			ReadOnly: mt.Mode == MountReadOnly, Upper: mt.Upper(), Work: mt.Work()})
	}
	return spec
}

// identity returns the user the containers run as, and whether they need
// a keep-id user namespace: rootless Podman maps the host user to root in
// the container unless told to keep it, and then the files of mounted
// folders, owned by the host user, would not be the container user's.
func (m *Manager) identity(rootless bool, s *Session) (user string, keepID bool) {
	keepID = rootless && len(s.mounts.list) > 0
	switch {
	case s.setupBase != "":
		return "0:0", false
	case s.serviceUser != "":
		return s.serviceUser, false
	case m.cfg.User != "":
		return m.cfg.User, keepID
	case keepID:
		return fmt.Sprintf("%d:%d", os.Geteuid(), os.Getegid()), true
	case s.profile != nil && s.profile.User != "":
		return s.profile.User, false // a project's remoteUser, numeric and not root (package devcontainer)
	case s.mounts.rootsOwner != "":
		return s.mounts.rootsOwner, false
	case s.mountPlan().Owner != "":
		return s.mountPlan().Owner, false
	}
	return DefaultUser, false
}

// prepareWorkspaceDir creates the directory mounted at /workspace, owned by
// the container's user. Without root, ownership cannot be given away, so the
// directory is made writable by all; its parents stay private (0700).
func (m *Manager) prepareWorkspaceDir(dir, user string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the workspace directory: %w", err)
	}
	uid, gid := parseUser(user)
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return fmt.Errorf("giving the workspace directory to %s: %w", user, err)
		}
		return nil
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return fmt.Errorf("opening the workspace directory to the container user: %w", err)
	}
	return nil
}

// ResolveAgentBinary returns the absolute path of the binary to mount as
// each container's init, and checks that it is statically linked: an image
// need not have the host's libc, or any libc.
func ResolveAgentBinary(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding the wink-mcp binary: %w", err)
		}
		path = exe
	}
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolving the agent binary: %w", err)
	}
	path, err = filepath.Abs(path)
	if err != nil {
		return "", err
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the agent binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("the agent binary %s is dynamically linked, so it cannot run in images without the host's libc; "+
				"build it with CGO_ENABLED=0 (`make build`, or see the README's install command)", path)
		}
	}
	return path, nil
}

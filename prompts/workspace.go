// Package prompts holds the guidance wink-mcp gives a model about its
// sandbox: the "Podman Workspace" prompt, whose text is also the server's
// instructions.
package prompts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/checkpoints"
)

// Name and Title of the workspace prompt.
const (
	Name  = "podman_workspace"
	Title = "Podman Workspace"
)

// Mount is a host folder exposed in the workspace.
type Mount struct {
	HostPath      string
	WorkspacePath string
	Mode          string
}

// Info is what the prompt tells the model about its sandbox.
type Info struct {
	// Image is the container image the workspace runs, or the one it will
	// start from (its profile's when it has one).
	Image string
	// ImagePending says how Image comes to be when it is not there yet
	// (pulled, built by the profile's setup), "" when it is.
	ImagePending string
	// Workspace is the workspace directory inside the container.
	Workspace string
	// ShellTimeoutSeconds is podman_shell's longest timeout.
	ShellTimeoutSeconds int
	// Mounts lists the host folders exposed in the workspace.
	Mounts []Mount
	// ClientRoots says the client's roots are mounted too, when the first
	// tool runs; until then Mounts lists only the configured folders.
	ClientRoots bool
	// Unenforced names the limits the host cannot enforce, if any.
	Unenforced string
	// Egress lists the allowlist patterns of the egress proxy; none means
	// no network at all, unless EgressAsk.
	Egress []string
	// EgressAsk says the user is asked about hosts no pattern allows.
	EgressAsk bool
	// Kept names the kept workspace the session works in, "" when its
	// workspace ends with it.
	Kept string
	// NoServices says workspace_service is refused here (Kubernetes).
	NoServices bool
	// Profiles are the toolchains the session may switch to with
	// workspace_profile; Profile is the one it uses ("" for none).
	Profiles []Profile
	Profile  string
	// Chosen is the profile the user picked for the task with the
	// prompt's profile argument, "" when none was picked.
	Chosen string
	// Detected says in a sentence what the server found in the host
	// folders about the toolchain they need, "" when it did not look.
	Detected string
	// CommandTimeoutSeconds is podman_shell's timeout when a call gives
	// none (the profile's), 0 for the tool's default of 30 seconds.
	CommandTimeoutSeconds int
	// IdleTimeout is how long the container stays without a call, and
	// MaxJobAge how long running jobs keep it past that (0: as long as
	// they run); 0 leaves idleness unmentioned.
	IdleTimeout, MaxJobAge time.Duration
	// ExportOnExit says the changes to mounted folders are written as
	// patches for the user when the session ends.
	ExportOnExit bool
	// EgressMaxBytes is what the egress proxy carries at most, both ways.
	EgressMaxBytes int64
	// Digest is the session's workspace digest, "" to leave it out, and
	// DigestGenerated says the server made it, no model having saved one.
	Digest          string
	DigestGenerated bool
}

// Profile is a profile the prompt lists.
type Profile struct {
	Name, Description string
	// Services are the services it declares, as "NAME at 127.0.0.1:PORT".
	Services []string
}

// Text renders the guidance: what the sandbox is, then a table of the live settings.
func Text(info Info) string {
	var b strings.Builder
	if info.Kept == "" {
		fmt.Fprintf(&b, "You have an isolated Linux container powered by Podman, made for this session. When the session ends, the container and the files in `%s` go with it, unless you first hand the workspace to another session with `workspace_handoff`: it then waits for that session's `workspace_attach` until the handle expires.", info.Workspace)
	} else {
		fmt.Fprintf(&b, "You have an isolated Linux container powered by Podman, working in the kept workspace %q: its files, checkpoints and changes to mounted folders stay when the session ends, and the next session that opens it finds them (in a new container: processes do not stay).", info.Kept)
	}
	if info.IdleTimeout > 0 {
		jobs := "while background jobs run"
		if info.MaxJobAge > 0 {
			jobs = "while background jobs run, for up to " + duration(info.MaxJobAge)
		}
		fmt.Fprintf(&b, " After %s without a call the container is removed (kept %s) and the next call makes a new one on the same files: processes end, files stay.", duration(info.IdleTimeout), jobs)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "- The file tools (ls, read_file, write_file, edit_file, glob, grep, rm) mirror a virtual filesystem interface but operate on `%s` inside the container. Their paths are relative to `%s`.\n", info.Workspace, info.Workspace)
	defaultTimeout := 30
	if info.CommandTimeoutSeconds > 0 {
		defaultTimeout = info.CommandTimeoutSeconds
	}
	fmt.Fprintf(&b, "- `podman_shell` runs commands (at most %d seconds each; %d when a call gives no timeout) in the same environment, starting in `%s`; files written by either are immediately visible to the other. Start servers, watchers and long builds with `background: true` and follow them with the `job` tool (status, paged output, signals, input); a server a job runs answers other commands on 127.0.0.1, and `workspace_port` shows it to the user at a URL on their machine until the job ends (a server started without `background` stops when its call returns). A truncated output names the job id that keeps all of it. `action: start` gives a command the user can paste to open a shell in the container.\n", info.ShellTimeoutSeconds, defaultTimeout, info.Workspace)
	network := "There is no network access"
	switch {
	case info.EgressAsk:
		network = "The only network access is an HTTP proxy (already set in HTTP_PROXY and HTTPS_PROXY, which pip, npm, apt, go, git and curl follow) to the hosts the table allows; for any other host the user is asked, and a refusal is a 403 whose text says why: retry the command once the user allowed the host"
	case len(info.Egress) > 0:
		network = "The only network access is an HTTP proxy (already set in HTTP_PROXY and HTTPS_PROXY, which pip, npm, apt, go, git and curl follow) to the hosts the table allows; anything else is refused with a 403 whose text names the host: tell the user which host you need and why, and they can allow it"
	}
	if info.EgressMaxBytes > 0 && (info.EgressAsk || len(info.Egress) > 0) {
		network += fmt.Sprintf("; past %s carried in all (both ways), every request is refused with a 403 that says so", checkpoints.FormatBytes(info.EgressMaxBytes))
	}
	if info.EgressAsk || len(info.Egress) > 0 {
		network += "; `workspace_egress` lists what is allowed and can drop a host or lock the network for the rest of the session once you no longer need it (it cannot add one)"
	}
	if info.Unenforced == "" {
		fmt.Fprintf(&b, "- %s. There is no privileged operation: you run as an unprivileged user with no capabilities, and memory, CPU and process counts are limited.\n", network)
	} else {
		fmt.Fprintf(&b, "- %s. There is no privileged operation: you run as an unprivileged user with no capabilities. This host cannot enforce the %s limits: the container shares the user's machine without them, so do not run anything that could exhaust it.\n", network, info.Unenforced)
	}
	fmt.Fprintf(&b, "- Do not assume files outside `%s` exist, and keep your work inside it; `/tmp` is a small scratch area.\n", info.Workspace)
	fmt.Fprintf(&b, "- `workspace_checkpoint` saves all of `%s` (mounted folders' changes included) cheaply; take one before a risky change. `workspace_restore` puts it back exactly, stopping running commands and jobs first, and can itself be undone; `workspace_checkpoint_diff` shows what changed since. `workspace_handoff` gives the workspace to another session, which takes it with `workspace_attach` (with its running container, jobs and open ports when both sessions are served by this server); `workspace_fork` copies it (files, not processes) into forks that other sessions claim the same way, to try several approaches from one state. `workspace_info` reports the workspace's state: its container, limits and what is used of them, jobs, checkpoints and ports.\n", info.Workspace)
	if len(info.Profiles) > 0 {
		current := "none yet: the image in the table"
		if info.Profile != "" {
			current = "`" + info.Profile + "`"
		}
		switch {
		case info.Chosen == "":
			fmt.Fprintf(&b, "- Toolchains come as profiles; the workspace uses %s. Before working, switch with `workspace_profile` to the one the task needs (switching later restarts the container; files stay):\n", current)
		case info.Chosen == info.Profile:
			fmt.Fprintf(&b, "- Toolchains come as profiles; the user chose `%s` for this task, and the workspace already uses it. The profiles:\n", info.Chosen)
		default:
			fmt.Fprintf(&b, "- Toolchains come as profiles; the workspace uses %s, and the user chose `%s` for this task: before anything else, switch to it with `workspace_profile` (name `%s`; files stay). The profiles:\n", current, info.Chosen, info.Chosen)
		}
		if info.Detected != "" && info.Chosen == "" {
			fmt.Fprintf(&b, "  %s\n", info.Detected)
		}
		for _, p := range info.Profiles {
			fmt.Fprintf(&b, "  - `%s`: %s\n", p.Name, p.Description)
			if len(p.Services) > 0 && !info.NoServices {
				fmt.Fprintf(&b, "    (declares services: %s; start one that does not run with `workspace_service` and its name)\n", strings.Join(p.Services, ", "))
			}
		}
		if !info.NoServices {
			b.WriteString("- `workspace_service` runs a database or cache (from a profile whose setup installs it) in a container of its own beside this one, reachable as `127.0.0.1:PORT` here; it ends with the session (not with this container: one made again reaches it at the same port), and a checkpoint never holds its data.\n")
		}
	}
	if len(info.Mounts) > 0 || info.ClientRoots {
		kept := "the user takes them as a patch while the session lasts (`wink-mcp export`), and they go with the session when it ends"
		switch {
		case info.Kept != "":
			kept = "they stay in the kept workspace for the user to take as a patch (`wink-mcp export`)"
		case info.ExportOnExit:
			kept = "they are written as a patch for the user when the session ends"
		}
		fmt.Fprintf(&b, "- The user's host folders are mounted in `%s` (see the table). Edit `overlay` folders freely: the copy on the host never changes, and your changes are kept for the user to review and apply: %s; `workspace_changes` lists them and `workspace_diff` shows them. `ro` folders are read-only. `copy` folders are a filtered copy of the host folder, tracked the same way.\n", info.Workspace, kept)
	}
	if info.ClientRoots {
		fmt.Fprintf(&b, "- Folders your client declares as its roots are mounted as well, when the first tool runs.\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "| setting | value |\n| --- | --- |\n")
	if info.ImagePending == "" {
		fmt.Fprintf(&b, "| image | `%s` |\n", info.Image)
	} else {
		fmt.Fprintf(&b, "| image | `%s` (%s) |\n", info.Image, info.ImagePending)
	}
	if info.Profile != "" {
		fmt.Fprintf(&b, "| profile | `%s` |\n", info.Profile)
	}
	fmt.Fprintf(&b, "| workspace | `%s` |\n", info.Workspace)
	if info.Kept != "" {
		fmt.Fprintf(&b, "| kept workspace | `%s` |\n", info.Kept)
	}
	switch {
	case len(info.Egress) > 0 && info.EgressAsk:
		fmt.Fprintf(&b, "| network | HTTP proxy to `%s`, and to hosts the user allows when asked |\n", strings.Join(info.Egress, "`, `"))
	case len(info.Egress) > 0:
		fmt.Fprintf(&b, "| network | HTTP proxy to `%s` only |\n", strings.Join(info.Egress, "`, `"))
	case info.EgressAsk:
		fmt.Fprintf(&b, "| network | HTTP proxy to the hosts the user allows when asked |\n")
	default:
		fmt.Fprintf(&b, "| network | none |\n")
	}
	if info.Unenforced != "" {
		fmt.Fprintf(&b, "| limits not enforced | %s |\n", info.Unenforced)
	}
	if len(info.Mounts) == 0 {
		fmt.Fprintf(&b, "| mounted host paths | none |\n")
	}
	for _, m := range info.Mounts {
		fmt.Fprintf(&b, "| mount | `%s` at `%s/%s` (%s) |\n", m.HostPath, info.Workspace, m.WorkspacePath, m.Mode)
	}
	if info.Digest != "" {
		if info.DigestGenerated {
			b.WriteString("\nThe workspace digest below was generated by the server from the mounted folder's files; no model has saved one yet. Check it, and once you know the repository save a better one with `workspace_digest` (scope `global` keeps it for the next session of this repository).\n\n")
		} else {
			b.WriteString("\nThe workspace digest below was saved with `workspace_digest` by an earlier session of this repository, or by this one: start from it, and save a corrected one when it is wrong.\n\n")
		}
		b.WriteString(info.Digest)
	}
	return b.String()
}

// ProfileArgument names the prompt's one argument, offered when there are
// profiles: the toolchain the user picks for the task.
const ProfileArgument = "profile"

// Workspace returns the prompt and its handler; infoFor gives the settings
// of the session a request belongs to. With profiles, the prompt takes an
// optional profile argument naming one of them; any other argument, or a
// profile not among them, is an error that says what the prompt takes.
func Workspace(profiles []Profile, infoFor func(ctx context.Context) Info) server.ServerPrompt {
	opts := []mcp.PromptOption{
		mcp.WithPromptTitle(Title),
		mcp.WithPromptDescription("What the Podman workspace sandbox is, how its tools relate, and its limits."),
	}
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	if len(profiles) > 0 {
		opts = append(opts, mcp.WithArgument(ProfileArgument, mcp.ArgumentDescription(
			"The toolchain this task needs, which the model switches to before working: one of "+strings.Join(names, ", ")+". Leave it empty to let the model choose.")))
	}
	handler := func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		chosen, err := chosenProfile(req.Params.Arguments, names)
		if err != nil {
			return nil, err
		}
		info := infoFor(ctx)
		info.Chosen = chosen
		return mcp.NewGetPromptResult(Title, []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(Text(info))),
		}), nil
	}
	return server.ServerPrompt{Prompt: mcp.NewPrompt(Name, opts...), Handler: handler}
}

// chosenProfile is the profile args pick, "" for none, or an error naming
// what is wrong and what the prompt takes.
func chosenProfile(args map[string]string, names []string) (string, error) {
	takes := "takes no arguments"
	if len(names) > 0 {
		takes = fmt.Sprintf("takes one optional argument, %q, naming a profile: %s", ProfileArgument, strings.Join(names, ", "))
	}
	for _, key := range slices.Sorted(maps.Keys(args)) {
		if key != ProfileArgument || len(names) == 0 {
			return "", fmt.Errorf("the %s prompt has no argument %q: it %s", Name, shown(key), takes)
		}
	}
	chosen := args[ProfileArgument]
	if chosen != "" && !slices.Contains(names, chosen) {
		return "", fmt.Errorf("argument %q: no profile is named %q; the %s prompt %s", ProfileArgument, shown(chosen), Name, takes)
	}
	return chosen, nil
}

// shown is s as an error message quotes it: at most 80 bytes of it, so a
// huge value is not sent back whole.
func shown(s string) string {
	const most = 80
	if len(s) <= most {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:most], len(s))
}

// duration says d in words: "15 minutes", "2 hours", "90 seconds".
func duration(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return unit(int64(d/time.Minute), "minute")
	}
	return unit(int64((d+time.Second-1)/time.Second), "second")
}

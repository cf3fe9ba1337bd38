// Package server builds wink-mcp's MCP server: it registers the tools and
// the workspace prompt, maps each MCP session to its workspace, and serves
// the transports.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/wink-mcp/wink-mcp/audit"
	"github.com/wink-mcp/wink-mcp/metrics"
	"github.com/wink-mcp/wink-mcp/prompts"
	"github.com/wink-mcp/wink-mcp/quota"
	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
	"github.com/wink-mcp/wink-mcp/tools"
	"github.com/wink-mcp/wink-mcp/workspace"
)

// DefaultShutdownTimeout bounds the wait for containers to be removed and
// changes exported at shutdown; what is not exported by then is kept.
const DefaultShutdownTimeout = 10 * time.Second

// sweepTimeout bounds the start-up sweep of orphaned containers.
const sweepTimeout = 2 * time.Minute

// Config configures a Server.
type Config struct {
	// Workspace says how session containers are made.
	Workspace workspace.Config
	// ShutdownTimeout bounds the wait for a session's container to be
	// removed and its changes exported when it or the server ends; changes
	// not exported by then are kept (workspace.ErrChangesKept).
	ShutdownTimeout time.Duration
	// HTTP configures the SSE and streamable HTTP transports.
	HTTP HTTPConfig
	// Logger receives every log record; nil discards them.
	Logger *slog.Logger
	// Lazy leaves a session without a container until a call needs one;
	// by default the container is made as soon as the session starts.
	Lazy bool
	// MaxCommandTimeout bounds podman_shell's timeout_seconds.
	MaxCommandTimeout time.Duration
	// KeptWorkspace names the kept workspace the stdio session opens, ""
	// for one that ends with the session. (HTTP clients name theirs in
	// the URL they connect to.)
	KeptWorkspace string
	// Audit receives one record per tool call, session and refused
	// request; nil writes none. The caller closes it after Close.
	Audit *audit.Log
	// Metrics counts sessions, calls and refusals; nil counts nothing.
	// The caller serves it.
	Metrics *metrics.Metrics
	// Quotas limits what each principal holds (its sessions plus
	// workspace handles, its containers' memory and CPU limits, its
	// egress bytes); nil limits nothing. New hands it to the workspaces
	// (Workspace.Quotas) and counts and audits its refusals.
	Quotas *quota.Ledger
}

// Server is wink-mcp's MCP server. Close must be called to remove its containers.
type Server struct {
	cfg       Config
	log       *slog.Logger
	mgr       *workspace.Manager
	tel       telemetry // the audit log and the metrics
	mcp       *mcpserver.MCPServer
	sessions  *sessionStore
	clients   clientSessions
	tasks     taskCounts
	results   taskResults
	subs      *subscriptions
	handles   *handleStore
	views     *handleViews // handles' workspaces as resources, and the streams following them
	cancels   *modernCancels
	questions *egressQuestions // the egress questions of 2026-07-28 calls
	tasks2026 *modernTasks     // the tasks of 2026-07-28 requests
	shared    *sharedHandles   // the records of handles on kept workspaces
	logs      *clientLogs
	stop      context.CancelFunc // stops the handles' idle reaper and the start-up sweep
	calls     *callTracker
	sweepDone chan struct{} // closed when the start-up sweep has ended
}

// New builds the server and starts sweeping orphaned containers in the
// background; it does not wait for Podman, which is reached on first use.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.MaxCommandTimeout <= 0 {
		cfg.MaxCommandTimeout = tools.DefaultMaxCommandTimeout
	}
	for _, p := range cfg.Workspace.Profiles.All() {
		if p.Limits.CommandTimeout > cfg.MaxCommandTimeout {
			return nil, fmt.Errorf("%s:%d: profile %q: limits.command_timeout %s is above --max-command-timeout %s; lower it or raise the flag",
				p.File, p.Line, p.Name, p.Limits.CommandTimeout, cfg.MaxCommandTimeout)
		}
	}
	// A port preview is an HTTP endpoint on this machine too: the same names and origins.
	cfg.Workspace.PreviewHosts, cfg.Workspace.PreviewOrigins = cfg.HTTP.AllowedHosts, cfg.HTTP.AllowedOrigins
	cfg.Workspace.Quotas = cfg.Quotas // containers hold their limits against the same ledger
	logs := &clientLogs{secrets: newRedactor(cfg.Workspace.PassedEnv)}
	log = slog.New(logs.handler(log.Handler()))
	mgr, err := workspace.NewManager(cfg.Workspace, log)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, mgr: mgr, sessions: newSessionStore(), subs: newSubscriptions(), handles: newHandleStore(), cancels: newModernCancels(),
		questions: newEgressQuestions(), logs: logs, calls: newCallTracker(), sweepDone: make(chan struct{}),
		tel: telemetry{audit: cfg.Audit, metrics: cfg.Metrics, mgr: mgr, log: log}}

	s.shared = newSharedHandles(cfg, s.handles, mgr, log)
	s.views = newHandleViews(s.shared.beginHandleCall)
	cfg.Quotas.OnRefused(s.tel.recordQuota)
	logs.server.Store(s)
	hooks := &mcpserver.Hooks{}
	hooks.AddOnRegisterSession(func(ctx context.Context, session mcpserver.ClientSession) {
		s.clients.add(session)
		s.tel.recordSession(ctx, session, audit.EventSessionOpen)
		logs.track(mgr.SessionHash(session.SessionID()), session.SessionID())
		if mcpgoadapt.IsStdio(session) {
			mgr.Register(session.SessionID(), workspace.SessionOptions{Workspace: cfg.KeptWorkspace, Stdio: true})
		}
	})
	hooks.AddOnUnregisterSession(func(ctx context.Context, session mcpserver.ClientSession) {
		s.clients.remove(session)
		s.tel.recordSession(ctx, session, audit.EventSessionClose)
		logs.forget(mgr.SessionHash(session.SessionID()), session.SessionID())
		// mcp-go may call this with a cancelled context (stdio at EOF).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		s.sessions.remove(session.SessionID())
		s.subs.drop(session.SessionID())
		s.results.endSession(session.SessionID())
		mgr.EndSession(ctx, session.SessionID())
	})
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
			s.sessions.initialized(session.SessionID())
		}
	})
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, _ *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
			logs.want(session.SessionID())
		}
	})
	s.trackUnsubscriptions(hooks)
	hooks.AddAfterListResources(listHandleResources(s))
	hooks.AddAfterListResourceTemplates(showTemplatesOfEra)
	hooks.AddOnRequestInitialization(s.checkRequest)
	hooks.AddBeforeCallTool(s.boundTaskTTL)
	hooks.AddOnError(s.tel.recordProtocolError)
	mgr.OnChange(s.notifyChanged)
	mgr.OnEgressAsk(s.askEgress)
	info := prompts.Info{Image: cfg.Workspace.ImageChoices()[0], Workspace: workspace.Root, ShellTimeoutSeconds: int(cfg.MaxCommandTimeout / time.Second),
		Mounts: promptMounts(mgr.Mounts()), ClientRoots: cfg.Workspace.MountRoots, Egress: cfg.Workspace.Egress, EgressAsk: cfg.Workspace.EgressAsk, Kept: cfg.KeptWorkspace,
		IdleTimeout: cfg.Workspace.IdleTimeout, MaxJobAge: cfg.Workspace.MaxJobAge, ExportOnExit: cfg.Workspace.ExportDir != "", EgressMaxBytes: cfg.Workspace.EgressMaxBytes}
	info.NoServices = cfg.Workspace.Engine != nil && cfg.Workspace.Engine.Service().Pods
	var profileList []tools.Profile
	var profileNames []string
	for _, p := range cfg.Workspace.Profiles.All() {
		profileList = append(profileList, tools.Profile{Name: p.Name, Description: p.Description})
		declared := []string{}
		for _, svc := range p.Services {
			entry := fmt.Sprintf("%s at 127.0.0.1:%d", svc.Name, svc.Ports[0])
			if svc.Autostart {
				entry += " (starts with the workspace)"
			}
			declared = append(declared, entry)
		}
		info.Profiles = append(info.Profiles, prompts.Profile{Name: p.Name, Description: p.Description, Services: declared})
		profileNames = append(profileNames, p.Name)
	}
	if d := cfg.Workspace.Detection; d != nil {
		info.Detected = d.Sentence()
	}
	s.instructSessions(hooks, info)
	s.mcp = mcpserver.NewMCPServer("wink-mcp", Version(),
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithPromptCapabilities(false),
		mcpserver.WithResourceCapabilities(true, false),
		mcpserver.WithLogging(),
		mcpserver.WithTitle("wink-mcp: a Podman workspace"),
		mcpserver.WithIcons(tools.ServerIcon()),
		mcpserver.WithCompletions(),
		mcpserver.WithResourceCompletionProvider(pathCompleter{s}),
		mcpserver.WithPromptCompletionProvider(profileCompleter{profileNames}),
		mcpserver.WithInstructions(prompts.Text(info)),
		mcpserver.WithHooks(hooks),
		mcpserver.WithToolHandlerMiddleware(s.holdTaskResults), // outermost: it holds what observe answers
		mcpserver.WithToolHandlerMiddleware(s.observe),
		mcpserver.WithToolHandlerMiddleware(s.tel.audited), // inside observe: it sees a handler's own error or panic
		mcpserver.WithToolHandlerMiddleware(s.traced),
		mcpserver.WithToolHandlerMiddleware(s.bindHandle),
		mcpserver.WithToolHandlerMiddleware(s.questions.askByInput), // inside bindHandle: it needs the handle's session
		mcpserver.WithTaskCapabilities(true, true, true),
		mcpserver.WithTaskHooks(s.taskHooks()),
		mcpserver.WithExtensions(map[string]any{tasksExtension: map[string]any{}}),
	)
	all, err := tools.All(s.workspaceFor, log, tools.Options{MaxCommandTimeout: cfg.MaxCommandTimeout, Profiles: profileList, Detected: info.Detected})
	if err != nil {
		mgr.Close(context.Background())
		return nil, err
	}
	legacySchemas, err := withHandleArg(all)
	if err != nil {
		mgr.Close(context.Background())
		return nil, err
	}
	hooks.AddAfterListTools(showLegacySchemas(legacySchemas))
	taskTools := map[string]bool{}
	for _, t := range all {
		if t.Tool.Execution != nil && t.Tool.Execution.TaskSupport != mcp.TaskSupportForbidden {
			taskTools[t.Tool.Name] = true
		}
	}
	s.tasks2026 = newModernTasks(taskTools, time.Duration(s.taskTTL(nil))*time.Millisecond, s.mcp.HandleMessage,
		func(handle, principal string) bool {
			_, end, err := s.handles.begin(handle, principal)
			if err == nil {
				end()
			}
			return err == nil
		})
	all = append(all, s.handleTools()...)
	s.mcp.AddTools(all...)
	s.tel.countTools(all)
	s.mcp.AddPrompts(prompts.Workspace(info.Profiles, func(ctx context.Context) prompts.Info { return s.promptInfo(ctx, info) }))
	if cfg.Workspace.MountRoots {
		mgr.SetRoots(s.clientRoots)
	}
	s.registerResources()
	if !cfg.Lazy {
		s.mcp.AddNotificationHandler(string(mcp.MethodNotificationInitialized), s.prestart)
	}
	reap, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.sweep(reap)
	go s.expireHandles(reap, cfg.Workspace.IdleTimeout)
	return s, nil
}

// checkRequest runs the checks made on every request before mcp-go serves
// it; an error is the request's answer. It reads the head its transport
// decoded (mcpgoadapt.HeadOf), not the message again.
func (s *Server) checkRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	head, err := mcpgoadapt.HeadOf(ctx, raw)
	if err != nil {
		return nil // not a request mcp-go can read either: it answers it
	}
	if err := refuseSessionless(ctx, head); err != nil {
		return err
	}
	if err := refuseSessionScoped(head); err != nil {
		return err
	}
	if mcp.IsModernProtocol(head.ProtocolVersion(mcp.MetaKeyProtocolVersion)) && !mcpgoadapt.IsStdio(mcpserver.ClientSessionFromContext(ctx)) {
		s.cancels.started(ctx, head.ID) // a stdio client has its connection to itself: mcpgoadapt cancels
	}
	switch head.MethodName() {
	case string(mcp.MethodResourcesSubscribe):
		// A uri that is not a string: mcp-go refuses the subscription.
		if uri, ok := head.URI(); ok && head.ParamsRead() {
			return s.subscribe(ctx, uri)
		}
	case string(mcp.MethodSubscriptionsListen):
		if mcp.IsModernProtocol(head.ProtocolVersion(mcp.MetaKeyProtocolVersion)) {
			return s.views.startListen(ctx, raw)
		}
	case string(mcp.MethodToolsCall):
		// Whatever else the call carries: mcp-go reads its task regardless.
		return s.taskCall(ctx, head)
	}
	return nil
}

// refuseSessionless answers server/discover, and any request made under the
// sessionless 2026-07-28 revision, with an error on the SSE transport, as a
// server from before that revision would: the spec deprecates SSE, so it
// stays 2025-only, and clients fall back to initialize and a session. Stdio
// and streamable HTTP serve both revisions.
func refuseSessionless(ctx context.Context, head *mcpgoadapt.Head) error {
	if !legacyOnly(ctx) {
		return nil
	}
	if head.MethodName() == string(mcp.MethodServerDiscover) || mcp.IsModernProtocol(head.ProtocolVersion(mcp.MetaKeyProtocolVersion)) {
		return errors.New("wink-mcp's SSE transport speaks the protocol revisions with sessions (2025-11-25 and earlier); connect with initialize, or use streamable HTTP (/mcp) for 2026-07-28")
	}
	return nil
}

// legacyOnlyKey marks the requests of a transport that serves the 2025
// revisions only (SSE).
type legacyOnlyKey struct{}

// legacyOnly reports whether ctx's request came on a 2025-only transport.
func legacyOnly(ctx context.Context) bool {
	only, _ := ctx.Value(legacyOnlyKey{}).(bool)
	return only
}

// Close removes every container of this server and releases its instance,
// within the shutdown timeout.
func (s *Server) Close() error {
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	start := time.Now()
	// The start-up sweep, stopped, removes what it made (an engine's probe
	// Pod) before the manager closes under it.
	select {
	case <-s.sweepDone:
	case <-ctx.Done():
	}
	err := s.mgr.Close(ctx)
	s.log.Info("server closed", "duration_ms", time.Since(start).Milliseconds())
	return err
}

// KeptForExport describes the sessions whose changes wait to be exported
// (--export-on-exit), with where they are kept and how to export them.
func (s *Server) KeptForExport() []string { return s.mgr.KeptForExport() }

// workspaceFor maps a tool call to its session's workspace.
func (s *Server) workspaceFor(ctx context.Context) (any, error) {
	ws, err := s.sessionWorkspace(ctx)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return ws, nil
}

// sessionWorkspace returns the workspace of the request's MCP session.
func (s *Server) sessionWorkspace(ctx context.Context) (*workspace.Session, error) {
	if id := handleSessionFrom(ctx); id != "" {
		return s.mgr.Session(id)
	}
	if mcpserver.IsModernRequest(ctx) {
		return nil, errors.New("a request of MCP revision 2026-07-28 has no session, so no workspace of its own: " +
			"open one with the workspace_open tool and pass its handle as the `workspace` argument of the tools; its resources are " + HandleFilesTemplate + ", workspace being the reference workspace_open returns")
	}
	session := mcpserver.ClientSessionFromContext(ctx)
	if session == nil || session.SessionID() == "" {
		// A sessionless request (protocol revision 2026-07-28) would share one
		// workspace with every other such request.
		return nil, errors.New("this call has no MCP session, so it has no workspace: connect with a protocol revision that has sessions (2025-11-25 or earlier), over stdio, SSE or streamable HTTP")
	}
	return s.mgr.Session(session.SessionID())
}

// sweep asks the container engine what the first container will need, then
// removes containers left by wink-mcp servers that died, until stop ends
// (Close) or sweepTimeout passes.
func (s *Server) sweep(stop context.Context) {
	defer close(s.sweepDone)
	ctx, cancel := context.WithTimeout(stop, sweepTimeout)
	defer cancel()
	start := time.Now()
	if err := s.mgr.Prepare(ctx); err != nil {
		s.log.Warn("the container engine is not ready for the first workspace; its first call will say why", "err", err)
	} else {
		s.log.Debug("ready for the first workspace", "duration_ms", time.Since(start).Milliseconds())
	}
	start = time.Now()
	removed, err := s.mgr.SweepOrphans(ctx)
	if err != nil {
		s.log.Warn("orphan sweep incomplete", "removed", removed, "err", err)
		return
	}
	s.log.Info("orphan sweep done", "removed", removed, "duration_ms", time.Since(start).Milliseconds())
}

// observe logs every tool call and turns a panic or a stray Go error into a
// tool error, so one bad call never takes the server down.
func (s *Server) observe(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		ctx = s.detachTask(ctx)
		if ctx.Err() != nil {
			return mcp.NewToolResultError("the call was cancelled before it started; nothing was done"), nil
		}
		start := time.Now()
		defer s.calls.start()()
		if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
			defer s.clients.calling(ctx, session.SessionID())()
		}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("tool call panicked", "tool", req.Params.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = mcp.NewToolResultError(fmt.Sprintf("internal error in %s; the server is still running, try again", req.Params.Name)), nil
			}
			if err != nil {
				s.log.Error("tool call failed", "tool", req.Params.Name, "err", err)
				res, err = mcp.NewToolResultError(err.Error()), nil
			}
			attrs := []any{"tool", req.Params.Name, "duration_ms", time.Since(start).Milliseconds(), "is_error", res.IsError}
			if session := mcpserver.ClientSessionFromContext(ctx); session != nil {
				attrs = append(attrs, "session", s.mgr.SessionHash(session.SessionID()))
			}
			if res.IsError {
				attrs = append(attrs, "error", firstText(res))
			}
			if tp := traceparentOf(req); tp != "" {
				attrs = append(attrs, "traceparent", tp)
			}
			s.log.Info("tool call", attrs...)
		}()
		return next(ctx, req)
	}
}

func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// Version is the module version wink-mcp was built from, or "dev".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

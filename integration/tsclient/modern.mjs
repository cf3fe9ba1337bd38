// A client of MCP revision 2026-07-28 with the official TypeScript SDK v2
// (@modelcontextprotocol/client), for wink-mcp's integration tests:
//
//   node modern.mjs pin|auto stdio WINK_BIN [ARGS...]
//   node modern.mjs pin|auto http URL [TOKEN]
//
// It connects pinned to 2026-07-28 or with negotiation auto, checks that
// every workspace tool declares the workspace argument mirrored into
// Mcp-Param-Workspace, that a tool called without a handle names
// workspace_open, then opens a workspace and drives every workspace tool
// with its handle, closes it, and checks the closed handle is refused. It
// prints one JSON line: {protocol, era, tools, calls: {tool: ok|error text},
// progress: the progress messages of a 5 s command, ...}.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [mode, kind, target, ...rest] = process.argv.slice(2);
const versionNegotiation = { mode: mode === "auto" ? "auto" : { pin: "2026-07-28" } };
let transport;
if (kind === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
} else {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}
const client = new Client({ name: "wink-ts-sdk2-test", version: "1.0.0" }, { versionNegotiation });
await client.connect(transport);

const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const out = { protocol: client.getNegotiatedProtocolVersion(), era: client.getProtocolEra(), calls: {} };
const { tools } = await client.listTools();
out.tools = tools.map((t) => t.name);
out.withoutHandleArg = tools
  .filter((t) => !["workspace_open", "workspace_close"].includes(t.name))
  .filter((t) => t.inputSchema?.properties?.workspace?.["x-mcp-header"] !== "Workspace")
  .map((t) => t.name);

const noHandle = await client.callTool({ name: "ls", arguments: { path: "." } });
out.noHandle = { isError: !!noHandle.isError, text: text(noHandle) };

const opened = await client.callTool({ name: "workspace_open", arguments: {} });
if (opened.isError) {
  console.log(JSON.stringify({ ...out, openError: text(opened) }));
  process.exit(0);
}
const workspace = opened.structuredContent.workspace;
out.handle = workspace;

// Each workspace tool once, with arguments that make it do its work.
const calls = [
  ["podman_shell", { action: "start" }],
  ["write_file", { file_path: "modern/a.txt", content: "one\n" }],
  ["read_file", { file_path: "modern/a.txt" }],
  ["edit_file", { file_path: "modern/a.txt", old_string: "one", new_string: "two" }],
  ["ls", { path: "modern" }],
  ["glob", { pattern: "modern/*.txt" }],
  ["grep", { pattern: "two" }],
  ["podman_shell", { command: ["sh", "-c", "cat modern/a.txt; echo from-shell > modern/b.txt"] }],
  ["job", { action: "list" }],
  ["evaluate_python", { code: "1 + 1" }],
  ["workspace_changes", {}],
  ["workspace_diff", {}],
  ["workspace_port", { action: "list" }],
  ["workspace_egress", { action: "list" }],
  ["workspace_service", { action: "list" }],
  ["workspace_checkpoint", { message: "modern" }],
  ["workspace_checkpoints", {}],
  ["workspace_checkpoint_diff", { from: "c1" }],
  ["rm", { path: "modern/b.txt" }],
  ["workspace_restore", { checkpoint: "c1" }],
  ["workspace_checkpoint_delete", { checkpoints: ["c1"] }],
  ["workspace_attach", { handle: "not-a-handoff-handle" }],
  ["workspace_fork", { count: 1, expires_in_seconds: 60 }],
  ["workspace_info", {}],
  ["workspace_digest", { action: "get" }],
];
// The built-in general profile is the server's image: switching restarts the container, files stay.
if (tools.some((t) => t.name === "workspace_profile")) calls.push(["workspace_profile", { name: "general", restart: true }]);
for (const [name, args] of calls) {
  const r = await client.callTool({ name, arguments: { ...args, workspace } });
  out.calls[name + (out.calls[name] ? "#2" : "")] = r.isError ? text(r) : "ok";
}
const shell = await client.callTool({ name: "podman_shell", arguments: { command: ["cat", "modern/a.txt"], workspace } });
out.afterRestore = shell.structuredContent?.stdout;
// A fork, claimed by this client as a workspace of its own, has the files.
const forked = await client.callTool({ name: "workspace_fork", arguments: { count: 1, workspace } });
const forkHandle = forked.structuredContent?.forks?.[0]?.handle;
const claimed = await client.callTool({ name: "workspace_open", arguments: { handoff: forkHandle ?? "none" } });
if (claimed.isError) {
  out.fork = "claim: " + text(claimed);
} else {
  const forkWs = claimed.structuredContent.workspace;
  const inFork = await client.callTool({ name: "podman_shell", arguments: { command: ["cat", "modern/a.txt"], workspace: forkWs } });
  out.fork = inFork.structuredContent?.stdout ?? text(inFork);
  await client.callTool({ name: "workspace_close", arguments: { workspace: forkWs } });
}
// Progress of a long call arrives on the call's own stream.
const progress = [];
await client.callTool({ name: "podman_shell", arguments: { command: ["sh", "-c", "echo started; sleep 5"], workspace } },
  { onprogress: (p) => progress.push(p.message) });
out.progress = progress;

const closed = await client.callTool({ name: "workspace_close", arguments: { workspace } });
out.closed = closed.isError ? text(closed) : "ok";
const after = await client.callTool({ name: "ls", arguments: { path: ".", workspace } });
out.afterClose = { isError: !!after.isError, text: text(after) };
console.log(JSON.stringify(out));
await client.close();

// Tasks of MCP revision 2026-07-28 (the io.modelcontextprotocol/tasks
// extension) through the official TypeScript SDK v2's transports:
//
//   node tasks.mjs stdio WINK_BIN [ARGS...]
//   node tasks.mjs http URL TOKEN OTHER_TOKEN
//
// The SDK's Client (pinned to 2026-07-28) opens the workspace and runs the
// plain calls. @modelcontextprotocol/client 2.4.0 has no tasks runtime: its
// callTool() refuses a result of resultType "task" (UnsupportedResultType),
// so the task requests are written by hand onto the same connected
// transport, with the 2026-07-28 _meta the SDK would send. It prints one
// JSON line.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [kind, target, ...rest] = process.argv.slice(2);
const TASKS = "io.modelcontextprotocol/tasks";

async function connect(token) {
  const transport = kind === "stdio"
    ? new StdioClientTransport({ command: target, args: rest, stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: "wink-ts-sdk2-tasks", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(transport);
  // Answers to the hand-written requests are taken off the transport here.
  const pending = new Map();
  const passOn = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const take = pending.get(message.id);
    if (take) {
      pending.delete(message.id);
      take(message);
    } else {
      passOn?.(message, extra);
    }
  };
  let n = 0;
  const raw = async (method, params, extensions = { [TASKS]: {} }) => {
    const id = `by-hand-${++n}`;
    const answer = new Promise((resolve) => pending.set(id, resolve));
    // The workspace argument's Mcp-Param-Workspace header, as callTool() sends it.
    const headers = params.arguments?.workspace ? { "Mcp-Param-Workspace": params.arguments.workspace } : undefined;
    await transport.send({ jsonrpc: "2.0", id, method, params: { ...params, _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "wink-ts-sdk2-tasks", version: "1.0.0" },
      "io.modelcontextprotocol/clientCapabilities": { extensions },
    } } }, { headers });
    return answer;
  };
  return { client, raw };
}

const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = {};
const alice = await connect(rest[0]);
const opened = await alice.client.callTool({ name: "workspace_open", arguments: {} });
const workspace = opened.structuredContent.workspace;
const shell = async (command) => (await alice.client.callTool({ name: "podman_shell", arguments: { command, workspace } })).structuredContent?.stdout;

async function poll(raw, taskId, until) {
  for (let i = 0; i < 600; i++) {
    const got = await raw("tasks/get", { taskId });
    if (got.error || until.includes(got.result.status)) return { ...got, polls: i + 1 };
    await sleep(100);
  }
  return { timedOut: true };
}

// A long podman_shell as a task, polled to completion.
const started = Date.now();
const created = await alice.raw("tools/call", { name: "podman_shell", arguments: { command: ["sh", "-c", "sleep 3; echo task-done"], workspace } });
out.created = { ms: Date.now() - started, ...created.result };
const done = await poll(alice.raw, created.result.taskId, ["completed", "failed", "cancelled"]);
out.completed = { status: done.result?.status, polls: done.polls, stdout: done.result?.result?.structuredContent?.stdout, ms: Date.now() - started };

// A task cancelled: its command is gone from the workspace.
const running = `for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c '^sleep 3127 ' || true`;
const long = await alice.raw("tools/call", { name: "podman_shell", arguments: { command: ["sleep", "3127"], workspace } });
for (let i = 0; i < 50 && (await shell(["sh", "-c", running]))?.trim() !== "1"; i++) await sleep(100);
out.runningBefore = (await shell(["sh", "-c", running]))?.trim();
out.cancel = await alice.raw("tasks/cancel", { taskId: long.result.taskId });
const cancelled = await poll(alice.raw, long.result.taskId, ["cancelled", "completed", "failed"]);
out.cancelled = cancelled.result?.status;
const cancelledAt = Date.now();
for (let i = 0; i < 100 && (await shell(["sh", "-c", running]))?.trim() !== "0"; i++) await sleep(100);
out.runningAfter = (await shell(["sh", "-c", running]))?.trim();
out.goneMs = Date.now() - cancelledAt;

out.update = (await alice.raw("tasks/update", { taskId: long.result.taskId, inputResponses: {} })).error?.message;
out.unknown = (await alice.raw("tasks/get", { taskId: "wtk_never-issued" })).error?.message;
out.withoutExtension = (await alice.raw("tools/call", { name: "podman_shell", arguments: { command: ["echo", "plain"], workspace } }, {})).result?.resultType;

if (kind === "http") {
  // Another principal: alice's task is unknown to bob, as a made-up id is,
  // and alice's handle makes no task for bob.
  const bob = await connect(rest[1]);
  out.bobGet = (await bob.raw("tasks/get", { taskId: created.result.taskId })).error?.message;
  out.bobCancel = (await bob.raw("tasks/cancel", { taskId: created.result.taskId })).error?.message;
  out.bobUnknown = (await bob.raw("tasks/get", { taskId: "wtk_never-issued" })).error?.message;
  const bobsCall = await bob.raw("tools/call", { name: "podman_shell", arguments: { command: ["true"], workspace } });
  out.bobWithAlicesHandle = { resultType: bobsCall.result?.resultType, text: bobsCall.result ? text(bobsCall.result) : bobsCall.error?.message };
  await bob.client.close();
}
await alice.client.callTool({ name: "workspace_close", arguments: { workspace } });
console.log(JSON.stringify(out));
await alice.client.close();

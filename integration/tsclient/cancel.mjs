// Two clients of MCP revision 2026-07-28 (@modelcontextprotocol/client v2)
// with two bearer tokens, for wink-mcp's integration tests:
//
//   node cancel.mjs URL TOKEN_A TOKEN_B
//
// A opens a workspace, follows a file with subscriptions/listen and starts
// a 4 s command; meanwhile B sends notifications/cancelled for the ids
// every client uses (0-30, listen:0-listen:5). It prints one JSON line:
// how A's command ended, whether A's stream is still open and still
// delivers an update, and whether A's own cancel stopped its command.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, tokenA, tokenB] = process.argv.slice(2);
const connect = async (token) => {
  const c = new Client({ name: "wink-ts-sdk2-cancel", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return c;
};
const a = await connect(tokenA), b = await connect(tokenB);
const updates = [];
a.setNotificationHandler("notifications/resources/updated", (n) => { updates.push(n.params.uri); });
const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const { workspace, resources } = (await a.callTool({ name: "workspace_open", arguments: {} })).structuredContent;
await a.callTool({ name: "write_file", arguments: { workspace, file_path: "f.txt", content: "1\n" } });
const sub = await a.listen({ resourceSubscriptions: [resources + "files/f.txt"] }, { timeout: 10000 });
let closed = "open";
sub.closed.then((cause) => { closed = cause; });

const long = a.callTool({ name: "podman_shell", arguments: { workspace, command: ["sh", "-c", "sleep 4; echo done"] } });
await new Promise((r) => setTimeout(r, 1000));
for (let i = 0; i <= 30; i++) await b.notification({ method: "notifications/cancelled", params: { requestId: i } });
for (let i = 0; i <= 5; i++) await b.notification({ method: "notifications/cancelled", params: { requestId: `listen:${i}` } });
const r = await long;
const out = { long: r.isError ? text(r) : r.structuredContent?.stdout };
await new Promise((r) => setTimeout(r, 500));
out.streamAfterOthersCancels = closed;
await a.callTool({ name: "write_file", arguments: { workspace, file_path: "f.txt", content: "2\n" } });
for (let i = 0; i < 100 && !updates.length; i++) await new Promise((r) => setTimeout(r, 50));
out.updates = updates;
// A's own cancel still works: an aborted call, then the workspace is free for the next.
const abort = new AbortController();
const own = a.callTool({ name: "podman_shell", arguments: { workspace, command: ["sh", "-c", "sleep 3; echo late > late.txt"] } }, { signal: abort.signal }).then(() => "answered", (e) => String(e.message ?? e));
await new Promise((r) => setTimeout(r, 1000));
abort.abort("test");
out.ownCancel = await own;
await new Promise((r) => setTimeout(r, 4000));
const late = await a.callTool({ name: "podman_shell", arguments: { workspace, command: ["sh", "-c", "cat late.txt 2>/dev/null || echo absent"] } });
out.afterOwnCancel = late.structuredContent?.stdout;
await sub.close();
await a.callTool({ name: "workspace_close", arguments: { workspace } });
console.log(JSON.stringify(out));
process.exit(0);

// A client of MCP revision 2026-07-28 (@modelcontextprotocol/client v2)
// driving a workspace handle's resources, for wink-mcp's integration tests:
//
//   node resources.mjs own stdio WINK_BIN [ARGS...]
//   node resources.mjs own|keep http URL [TOKEN]
//   node resources.mjs probe http URL TOKEN RESOURCES
//   node resources.mjs expire stdio WINK_BIN [ARGS...]
//
// own: opens a workspace, writes dir/a.txt, lists the handle's resources
// (its handle in _meta), lists the templates, reads the file and the
// snapshot, completes "dir/", follows the file and the snapshot with
// subscriptions/listen, changes the file from podman_shell and with
// write_file and waits for each update, checks a second stream of
// another workspace's URIs is refused, closes the handle and reports how
// the stream ended and what a read gets then. keep: the same but leaves
// the handle open. probe: tries to read, complete and follow another
// client's RESOURCES prefix. expire: opens a workspace, follows its
// snapshot and waits (up to 60 s) for the stream to end with the idle
// handle. It prints one JSON line.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [mode, kind, target, ...rest] = process.argv.slice(2);
let transport;
if (kind === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
} else {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}
const client = new Client({ name: "wink-ts-sdk2-resources", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
await client.connect(transport);
const updates = [];
client.setNotificationHandler("notifications/resources/updated", (n) => { updates.push(n.params.uri); });

const errorOf = async (f) => { try { await f(); return "ok"; } catch (e) { return String(e.message ?? e); } };
const refOf = (resources) => resources.split("/")[3];
const template = "wink://workspace/{workspace}/files/{+path}";
const out = { protocol: client.getNegotiatedProtocolVersion() };

if (mode === "probe") {
  const resources = rest[1];
  out.read = await errorOf(() => client.readResource({ uri: resources + "files/dir/a.txt" }, { cacheMode: "bypass" }));
  out.snapshotError = await errorOf(() => client.readResource({ uri: resources + "snapshot" }, { cacheMode: "bypass" }));
  out.completeError = await errorOf(() => client.complete({ ref: { type: "ref/resource", uri: template }, argument: { name: "path", value: "dir/" }, context: { arguments: { workspace: refOf(resources) } } }));
  out.listen = await errorOf(async () => { const s = await client.listen({ resourceSubscriptions: [resources + "files/dir/a.txt"] }, { timeout: 10000 }); await s.close(); });
  console.log(JSON.stringify(out));
  await client.close();
  process.exit(0);
}

if (mode === "expire") {
  const opened = await client.callTool({ name: "workspace_open", arguments: {} });
  const { resources } = opened.structuredContent;
  const sub = await client.listen({ resourceSubscriptions: [resources + "snapshot"] }, { timeout: 10000 });
  out.closedBy = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r("still open after 60 s"), 60000))]);
  out.readAfterClose = await errorOf(() => client.readResource({ uri: resources + "snapshot" }, { cacheMode: "bypass" }));
  console.log(JSON.stringify(out));
  await client.close();
  process.exit(0);
}

const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${text(r)}`);
  return r;
};
const opened = await call("workspace_open", {});
const { workspace, resources } = opened.structuredContent;
out.resources = resources;
await call("write_file", { workspace, file_path: "dir/a.txt", content: "one\n" });

const listed = await client.listResources({ _meta: { "wink-mcp/workspace": workspace } }, { cacheMode: "bypass" });
out.listed = listed.resources.map((r) => r.uri);
out.listedWithoutHandle = (await client.listResources(undefined, { cacheMode: "bypass" })).resources.map((r) => r.uri);
out.listedUnknown = await errorOf(() => client.listResources({ _meta: { "wink-mcp/workspace": "wsh_made_up" } }, { cacheMode: "bypass" }));
out.readUnknown = await errorOf(() => client.readResource({ uri: "file:///etc/passwd" }, { cacheMode: "bypass" }));
out.templates = (await client.listResourceTemplates(undefined, { cacheMode: "bypass" })).resourceTemplates.map((t) => t.uriTemplate);
const file = resources + "files/dir/a.txt";
out.read = (await client.readResource({ uri: file }, { cacheMode: "bypass" })).contents[0].text;
out.snapshot = JSON.parse((await client.readResource({ uri: resources + "snapshot" }, { cacheMode: "bypass" })).contents[0].text).files.map((f) => f.uri);
out.traversal = await errorOf(() => client.readResource({ uri: resources + "files/../../etc/passwd" }, { cacheMode: "bypass" }));
out.complete = (await client.complete({ ref: { type: "ref/resource", uri: template }, argument: { name: "path", value: "dir/" }, context: { arguments: { workspace: refOf(resources) } } })).completion.values;

const sub = await client.listen({ resourceSubscriptions: [file, resources + "snapshot"] }, { timeout: 10000 });
out.honored = sub.honoredFilter.resourceSubscriptions;
const waitFor = async (uri, since) => {
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    if (updates.slice(since).includes(uri)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
};
let since = updates.length;
await call("podman_shell", { workspace, command: ["sh", "-c", "echo from-shell > dir/a.txt"] });
out.updatedByShell = await waitFor(file, since);
out.read2 = (await client.readResource({ uri: file }, { cacheMode: "bypass" })).contents[0].text;
since = updates.length;
await call("write_file", { workspace, file_path: "dir/a.txt", content: "three\n" });
out.updatedByTool = await waitFor(file, since);
out.snapshotUpdated = updates.includes(resources + "snapshot");
out.mixed = await errorOf(async () => { const s = await client.listen({ resourceSubscriptions: [file, "wink://workspace/wsr_AAAAAAAAAAAAAAAAAAAAAA/snapshot"] }, { timeout: 10000 }); await s.close(); });
out.legacyURI = await errorOf(async () => { const s = await client.listen({ resourceSubscriptions: ["wink://workspace/files/dir/a.txt"] }, { timeout: 10000 }); await s.close(); });

if (mode === "keep") {
  await sub.close();
  console.log(JSON.stringify(out));
  await client.close();
  process.exit(0);
}
await call("workspace_close", { workspace });
out.closedBy = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r("still open after 10 s"), 10000))]);
out.readAfterClose = await errorOf(() => client.readResource({ uri: file }, { cacheMode: "bypass" }));
console.log(JSON.stringify(out));
await client.close();
process.exit(0);

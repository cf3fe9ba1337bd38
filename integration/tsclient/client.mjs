// A session with the official TypeScript SDK's default client over streamable
// HTTP, for wink-mcp's integration tests: node client.mjs URL [TOKEN].
// It asks for log messages at info, starts the session's workspace, writes a
// file, prints {sessionId, container, protocol, links, logs, ...} as one JSON line
// (links: the resource_link URIs of write_file's result; logs: the messages
// of the notifications/message it heard), with the tools, those with an SVG
// icon, the server's icons, the completions of the path "ts/li" in the
// files template and of the workspace prompt's profile "p", and the
// resources/updated URIs it heard (updated) after
// subscribing to ts/shell.txt, which a podman_shell command then writes;
// waits for a line on stdin, then ends the session.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createInterface } from "node:readline";
import { LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "wink-ts-sdk-test", version: "1.0.0" });
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params.data?.message); });
const updated = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
await client.connect(transport);
await client.setLoggingLevel("info");
const result = await client.callTool({ name: "podman_shell", arguments: { action: "start" } });
const written = await client.callTool({ name: "write_file", arguments: { file_path: "ts/links.txt", content: "x" } });
await client.subscribeResource({ uri: "wink://workspace/files/ts/shell.txt" });
const shell = await client.callTool({ name: "podman_shell", arguments: { command: ["sh", "-c", "echo made by a command > ts/shell.txt"] } });
for (const r of [result, written, shell]) {
  if (r.isError) {
    console.error(JSON.stringify(r.content));
    process.exit(1);
  }
}
const links = written.content.filter((c) => c.type === "resource_link").map((c) => c.uri);
const { tools } = await client.listTools();
const toolsWithIcons = tools.filter((t) => t.icons?.[0]?.src?.startsWith("data:image/svg+xml")).length;
const serverIcons = client.getServerVersion().icons?.length ?? 0;
const completed = await client.complete({
  ref: { type: "ref/resource", uri: "wink://workspace/files/{+path}" },
  argument: { name: "path", value: "ts/li" },
});
const profiles = await client.complete({
  ref: { type: "ref/prompt", name: "podman_workspace" },
  argument: { name: "profile", value: "p" },
});
console.log(JSON.stringify({
  sessionId: transport.sessionId,
  container: result.structuredContent.container,
  protocol: transport.protocolVersion,
  links,
  logs,
  tools: tools.length,
  toolsWithIcons,
  serverIcons,
  completions: completed.completion.values,
  profileCompletions: profiles.completion.values,
  updated,
}));
const stdin = createInterface({ input: process.stdin });
await new Promise((resolve) => stdin.once("line", resolve));
stdin.close();
await transport.terminateSession();
await client.close();

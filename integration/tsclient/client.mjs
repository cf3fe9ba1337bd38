// A session with the official TypeScript SDK's default client over streamable
// HTTP, for wink-mcp's integration tests: node client.mjs URL [TOKEN].
// It starts the session's workspace, prints {sessionId, container, protocol}
// as one JSON line, waits for a line on stdin, then ends the session.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createInterface } from "node:readline";

const [url, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "wink-ts-sdk-test", version: "1.0.0" });
await client.connect(transport);
const result = await client.callTool({ name: "podman_shell", arguments: { action: "start" } });
if (result.isError) {
  console.error(JSON.stringify(result.content));
  process.exit(1);
}
console.log(JSON.stringify({
  sessionId: transport.sessionId,
  container: result.structuredContent.container,
  protocol: transport.protocolVersion,
}));
const stdin = createInterface({ input: process.stdin });
await new Promise((resolve) => stdin.once("line", resolve));
stdin.close();
await transport.terminateSession();
await client.close();

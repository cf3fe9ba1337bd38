// A client of MCP revision 2026-07-28 with the official TypeScript SDK v2
// (@modelcontextprotocol/client), for wink-mcp's test of handles across
// replicas (integration/kubernetes_handles_test.go):
//
//   node handles.mjs URL TOKEN NAME ROUNDS
//
// Pinned to 2026-07-28, it opens the kept workspace NAME through URL (a
// proxy in front of the replicas), then, ROUNDS times, writes round-I.txt
// and lists every round's file with podman_shell, and leaves the handle
// open. It prints one JSON line: {handle, rounds: [{isError, text, stdout}], ms: [per round]}.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, token, name, rounds] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const client = new Client({ name: "wink-ts-handles-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
await client.connect(transport);

const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const opened = await client.callTool({ name: "workspace_open", arguments: { name } });
if (opened.isError) {
  console.log(JSON.stringify({ openError: text(opened) }));
  process.exit(0);
}
const workspace = opened.structuredContent.workspace;
const out = { handle: workspace, rounds: [], ms: [] };
for (let i = 0; i < Number(rounds); i++) {
  const begin = Date.now();
  const wrote = await client.callTool({ name: "write_file", arguments: { file_path: `round-${i}.txt`, content: `round ${i}\n`, workspace } },
    undefined, { timeout: 120000 });
  if (wrote.isError) {
    out.rounds.push({ isError: true, text: text(wrote) });
    break;
  }
  const listed = await client.callTool({ name: "podman_shell", arguments: { command: ["sh", "-c", "cat round-*.txt"], workspace } },
    undefined, { timeout: 120000 });
  out.rounds.push({ isError: !!listed.isError, text: text(listed), stdout: listed.structuredContent?.stdout });
  out.ms.push(Date.now() - begin);
}
console.log(JSON.stringify(out));
await client.close();

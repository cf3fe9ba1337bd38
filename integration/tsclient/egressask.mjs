// The egress question of MCP revision 2026-07-28, asked by an
// InputRequiredResult, driven with the official TypeScript SDK v2 client
// (@modelcontextprotocol/client) pinned to 2026-07-28:
//
//   node egressask.mjs YES_URL NO_HOST stdio WINK_BIN [ARGS...]
//   node egressask.mjs YES_URL NO_HOST http URL TOKEN OTHER_TOKEN
//
// The user (this client's elicitation handler) allows YES_URL's host and
// declines every other. With a handle: the CA bundle goes into the
// workspace, YES_URL is fetched twice (the SDK answers the
// input_required result and retries on its own), NO_HOST is tried through
// the proxy. Then by hand (allowInputRequired): a call for an unlisted host
// gets input_required; a retry with a forged state, with the state but
// other arguments, and (over HTTP) with the state under another token are
// refused. It prints one JSON line.
import { readFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [yesURL, noHost, kind, target, ...rest] = process.argv.slice(2);
const yesHost = new URL(yesURL).hostname;

function connect(token, questions) {
  const transport = kind === "stdio"
    ? new StdioClientTransport({ command: target, args: rest, stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: "wink-ts-sdk2-egress", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler("elicitation/create", async (request) => {
    const message = request.params.message;
    questions.push(message);
    return message.includes(` ${yesHost} `) ? { action: "accept", content: { allow: true } } : { action: "decline" };
  });
  return client.connect(transport).then(() => client);
}

const text = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const questions = [];
const client = await connect(rest[0], questions);
const out = { protocol: client.getNegotiatedProtocolVersion() };
const opened = await client.callTool({ name: "workspace_open", arguments: {} });
const workspace = opened.structuredContent.workspace;

const shell = (command) => client.callTool({ name: "podman_shell",
  arguments: { command, env: { SSL_CERT_FILE: "/workspace/ca.pem" }, timeout_seconds: 120, workspace } });
// By hand: the input_required result handed back, against podman_shell's
// definition without its output schema (which an input_required result has
// no structured content for), with its Mcp-Param-Workspace header.
const { tools } = await client.listTools();
const { outputSchema, ...toolDefinition } = tools.find((t) => t.name === "podman_shell");
const byHand = (c, params) => c.callTool(params, { allowInputRequired: true, toolDefinition });
const ca = readFileSync("/etc/ssl/certs/ca-certificates.crt", "utf8");
const parts = [];
for (let i = 0; i * 40000 < ca.length; i++) {
  const file_path = `.ca/${String(i).padStart(3, "0")}`;
  await client.callTool({ name: "write_file", arguments: { file_path, content: ca.slice(i * 40000, (i + 1) * 40000), workspace } });
  parts.push(file_path);
}
await shell(["sh", "-c", `cat ${parts.join(" ")} > ca.pem && rm -r .ca`]);

const fetch = ["python3", "-c", `import urllib.request\nprint(urllib.request.urlopen(${JSON.stringify(yesURL)}).status)`];
const connectTo = (host) => ["python3", "-c", `import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"CONNECT ${host}:443 HTTP/1.1\\r\\n\\r\\n")
print(s.recv(4096).decode(errors="replace"))`];
const stdout = (r) => r.isError ? "error: " + text(r) : r.structuredContent?.stdout ?? text(r);

out.yes = stdout(await shell(fetch));
out.yesAgain = stdout(await shell(fetch));
out.no = stdout(await shell(connectTo(noHost)));
out.questions = [...questions];

// By hand: the input_required result itself, and retries that must fail.
const unlisted = connectTo("unlisted.example");
const args = { command: unlisted, env: { SSL_CERT_FILE: "/workspace/ca.pem" }, timeout_seconds: 120, workspace };
const asked = await byHand(client, { name: "podman_shell", arguments: args });
out.manual = { resultType: asked.resultType, state: typeof asked.requestState === "string" && asked.requestState.length > 40,
  question: asked.inputRequests?.egress?.params?.message ?? JSON.stringify(asked.inputRequests?.egress) };
const answer = { egress: { action: "accept", content: { allow: true } } };
const retry = (c, args, requestState) => byHand(c, { name: "podman_shell", arguments: args, requestState, inputResponses: answer });
out.forged = text(await retry(client, args, "weq_" + "A".repeat(52)));
out.otherCall = text(await retry(client, { ...args, timeout_seconds: 60 }, asked.requestState));
if (kind === "http") {
  const other = await connect(rest[1], []);
  const theirs = await other.callTool({ name: "workspace_open", arguments: {} });
  out.otherPrincipal = text(await retry(other, { ...args, workspace: theirs.structuredContent.workspace }, asked.requestState));
  await other.close();
}
// The state is still good for its own call: the answer lets the host
// through (it does not resolve, so the proxy says so, not 403).
out.answered = stdout(await retry(client, args, asked.requestState));
out.replayed = text(await retry(client, args, asked.requestState));
console.log(JSON.stringify(out));
await client.close();

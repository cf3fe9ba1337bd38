// A session with the official TypeScript SDK's stdio client, ended the way
// it ends one: node stdio_exit.mjs SPEC, where SPEC is a JSON object
// {bin, args, stderr, calls}: it starts bin with args (the server's stderr
// goes to the file stderr), makes each call [tool, arguments] in turn
// (an error result stops it), reads workspace_changes and the first page
// of workspace_diff, then closes the client, which closes the server's
// stdin, sends SIGTERM two seconds later and SIGKILL two seconds after
// that. It prints one JSON line: the milliseconds and bytes of the two
// reads, the first page of the diff, the server's pid and how long the
// close took.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createWriteStream } from "node:fs";

const spec = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command: spec.bin, args: spec.args, stderr: "pipe" });
transport.stderr.pipe(createWriteStream(spec.stderr));
const client = new Client({ name: "wink-ts-sdk-exit-test", version: "1.0.0" });
await client.connect(transport);
for (const [name, args] of spec.calls) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  if (r.isError) {
    console.error(name, JSON.stringify(r.content));
    process.exit(1);
  }
}
const timed = async (name, args) => {
  const start = performance.now();
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  return { ms: Math.round(performance.now() - start), bytes: JSON.stringify(r).length, result: r };
};
const changes = await timed("workspace_changes", {});
const diff = await timed("workspace_diff", {});
const pid = transport.pid;
const start = performance.now();
await client.close();
console.log(JSON.stringify({
  changesMs: changes.ms, changesBytes: changes.bytes, diffMs: diff.ms, diffBytes: diff.bytes,
  diff: diff.result.structuredContent?.diff ?? "", closeMs: Math.round(performance.now() - start), pid,
}));

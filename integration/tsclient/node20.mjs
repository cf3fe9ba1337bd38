// Lets @modelcontextprotocol/conformance, which asks for Node.js 22, run on
// Node.js 20: node --import ./node20.mjs. The suite imports fs.globSync
// (new in 22) only to find its own scenario files, which the server suite
// does not use; this gives it an fs module with a globSync that says so.
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

const shim = "data:text/javascript," + encodeURIComponent(
  'export * from "node:fs"; import fs from "node:fs"; export default fs;' +
  ' export function globSync() { throw new Error("fs.globSync needs Node.js 22"); }');

if (isMainThread) {
  register(import.meta.url);
}

// resolve is the module hook: the suite's "fs" becomes the shim.
export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}

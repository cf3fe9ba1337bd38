// Package mcpgoadapt adapts the transports of mcp-go
// (github.com/mark3labs/mcp-go, v1.2.1) to what wink-mcp promises where
// mcp-go's own behaviour falls short. Each workaround names the upstream
// behaviour it replaces, so that it can go when mcp-go changes:
//
//   - The stdio loop (ServeStdio) replaces mcp-go's StdioServer, which
//     reads each line whole whatever its length (readNextLine's
//     bufio.Reader.ReadString), serves tool calls from a pool of 5 workers
//     behind a queue of 100 and on the read loop itself once the queue is
//     full (processMessage), and writes the answer of a request the client
//     cancelled (handleRequest; since mark3labs/mcp-go#756, the fix of
//     mark3labs/mcp-go#755, the request's context is cancelled, but its
//     answer still goes out). ServeStdio keeps at most a bounded part of a
//     line, serves each request on its own goroutine up to
//     MaxStdioInflight, and leaves a cancelled request unanswered, as the
//     MCP cancellation utility asks.
//   - Exact ids (ServeStdio, and NewExactIDs around streamable HTTP and
//     SSE): mcp-go decodes a request's id and its progress token into an
//     any (mcp.RequestId, HandleMessage's baseMessage), so a number comes
//     back as float64 (2^64 as 18446744073709552000, 1e3 as 1000, 1.50 as
//     1.5) and a string is re-encoded with "<" escaped; see
//     mark3labs/mcp-go#154 and the draft mark3labs/mcp-go#291, open since
//     2025 because "it unmarshals numbers into floats". Ids and tokens it
//     would change reach it under an alias, swapped back in all it writes.
//   - The event log (NewEventLog): mcp-go's streamable HTTP transport
//     drops a notification a tool sends just before it returns about half
//     the time unless it has an event store (mark3labs/mcp-go#969, open);
//     this store keeps each session's latest events, bounded.
//   - The transports' logger (QuietLogger): mcp-go's streamable HTTP
//     transport logs session ids at info level; it gets warnings only.
//   - The request head (Head): mcp-go hands its hooks only the raw message
//     (Hooks.AddOnRequestInitialization), so each check the server runs
//     there decoded it whole again. The transports here decode the head of
//     each message once and carry it in the request's context (HeadOf).
package mcpgoadapt

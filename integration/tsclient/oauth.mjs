// The official TypeScript SDK's client against wink-mcp in the OAuth
// resource-server mode, for wink-mcp's integration tests:
// node oauth.mjs URL CLIENT_ID CLIENT_SECRET ISSUER SCOPE. It is given the
// server's URL and client credentials (with the issuer they may be sent to,
// and the scope to ask for, which the SDK's client_credentials provider
// takes from its configuration): from the first 401's resource_metadata it
// finds the authorization server (Hydra) and its token endpoint, gets a
// token by the client_credentials grant, and retries; then it lists the tools and prints
// {tools, sessionId, tokenAudience} as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";

const [url, clientId, clientSecret, expectedIssuer, scope] = process.argv.slice(2);

// Hydra takes a token's audience from its own "audience" parameter, not
// RFC 8707's "resource" (which the SDK sends too): pass the resource as both.
class HydraCredentials extends ClientCredentialsProvider {
  prepareTokenRequest(scope) {
    const params = super.prepareTokenRequest(scope);
    params.set("audience", url);
    return params;
  }
}

const provider = new HydraCredentials({ clientId, clientSecret, expectedIssuer, scope });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
const client = new Client({ name: "wink-ts-oauth-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const payload = JSON.parse(Buffer.from(provider.tokens().access_token.split(".")[1], "base64url"));
console.log(JSON.stringify({ tools: tools.length, sessionId: transport.sessionId, tokenAudience: payload.aud }));
await transport.terminateSession();
await client.close();

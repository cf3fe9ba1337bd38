package integration

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// oauthServer is a wink-mcp in the OAuth resource-server mode, trusting
// a Hydra of its own.
type oauthServer struct {
	p        *proc
	idp      *hydra
	resource string // the canonical URI: the URL it listens at
	origin   string
}

func startOAuthServer(t *testing.T, transport string) *oauthServer {
	idp := startHydra(t)
	p := launch(t, startOptions{transport: transport, args: []string{"--oauth-issuer", idp.issuer, "--oauth-scopes", "mcp", "--lazy"}})
	u, err := url.Parse(p.url)
	if err != nil {
		t.Fatal(err)
	}
	return &oauthServer{p: p, idp: idp, resource: p.url, origin: u.Scheme + "://" + u.Host}
}

// bearer is the header of an access token.
func bearerHeader(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

func TestOAuthHydraTokensOverStreamableHTTP(t *testing.T) {
	s := startOAuthServer(t, "http")
	other := startHydra(t) // another issuer, whose tokens are not accepted
	idA, secretA := s.idp.register("client-a", "mcp other", s.resource, "https://other.example/mcp")
	idB, secretB := s.idp.register("client-b", "mcp", s.resource)
	idE, secretE := s.idp.register("client-expiring", "mcp", s.resource)
	s.idp.shortLived(idE, "1s")
	idO, secretO := other.register("client-a", "mcp", s.resource)
	tokenA := s.idp.token(idA, secretA, "mcp", s.resource)

	t.Run("protected resource metadata", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
			resp := rawRequest(t, "GET", s.origin+path, nil, "")
			var meta struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				ScopesSupported      []string `json:"scopes_supported"`
				BearerMethods        []string `json:"bearer_methods_supported"`
			}
			err := json.NewDecoder(resp.Body).Decode(&meta)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || meta.Resource != s.resource || !slices.Equal(meta.AuthorizationServers, []string{s.idp.issuer}) ||
				!slices.Equal(meta.ScopesSupported, []string{"mcp"}) || !slices.Equal(meta.BearerMethods, []string{"header"}) {
				t.Fatalf("%s: %d %+v %v", path, resp.StatusCode, meta, err)
			}
		}
	})

	t.Run("a real token works: initialize, list tools, run a command", func(t *testing.T) {
		s.p.connect(bearerHeader(tokenA))
		tools, err := s.p.client.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil || len(tools.Tools) == 0 {
			t.Fatalf("tools/list: %v", err)
		}
		if res := s.p.run("echo", "hello"); res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "hello" {
			t.Fatalf("podman_shell: %+v", res)
		}
	})

	// The refusals, each of a real token from Hydra (or one spoiled from it).
	parts := strings.Split(tokenA, ".")
	b64 := base64.RawURLEncoding
	payload, _ := b64.DecodeString(parts[1])
	tampered := strings.Replace(string(payload), `"sub":"client-a"`, `"sub":"client-b"`, 1)
	header, _ := b64.DecodeString(parts[0])
	noneHeader := strings.Replace(string(header), `"alg":"RS256"`, `"alg":"none"`, 1)
	expired := s.idp.token(idE, secretE, "mcp", s.resource)
	tokenB := s.idp.token(idB, secretB, "mcp", s.resource)
	time.Sleep(1*time.Second + 5*time.Second + time.Second) // its lifespan, the leeway, a margin

	metadataURL := `resource_metadata="` + s.origin + `/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name        string
		token       string
		status      int
		wantHeader  []string
		wantMessage string
	}{
		{"missing token", "", 401, []string{metadataURL, `scope="mcp"`}, "send Authorization: Bearer"},
		{"expired", expired, 401, []string{metadataURL, `error="invalid_token"`}, "expired"},
		{"wrong audience", s.idp.token(idA, secretA, "mcp", "https://other.example/mcp"), 401, []string{`error="invalid_token"`}, "audience"},
		{"wrong issuer", other.token(idO, secretO, "mcp", s.resource), 401, []string{`error="invalid_token"`}, "key"},
		{"alg none", b64.EncodeToString([]byte(noneHeader)) + "." + parts[1] + ".", 401, []string{`error="invalid_token"`}, "allowed algorithm"},
		{"tampered payload", parts[0] + "." + b64.EncodeToString([]byte(tampered)) + "." + parts[2], 401, []string{`error="invalid_token"`}, "signature"},
		{"insufficient scope", s.idp.token(idA, secretA, "other", s.resource), 403, []string{metadataURL, `error="insufficient_scope"`, `scope="mcp"`}, "insufficient_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "tampered payload" && tampered == string(payload) {
				t.Fatalf("the token's payload has no sub to change: %s", payload)
			}
			headers := map[string]string{}
			if tt.token != "" {
				headers = bearerHeader(tt.token)
			}
			resp := rawRequest(t, "POST", s.resource, headers, initializeBody)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			challenge := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.wantMessage) {
				t.Fatalf("got %d %q (WWW-Authenticate: %s), want %d with %q", resp.StatusCode, body, challenge, tt.status, tt.wantMessage)
			}
			for _, want := range tt.wantHeader {
				if !strings.HasPrefix(challenge, "Bearer ") || !strings.Contains(challenge, want) {
					t.Fatalf("WWW-Authenticate: %s, want %s", challenge, want)
				}
			}
		})
	}

	t.Run("principal B cannot use principal A's session", func(t *testing.T) {
		resp := rawRequest(t, "POST", s.resource, bearerHeader(tokenA), initializeBody)
		resp.Body.Close()
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || id == "" {
			t.Fatalf("initialize as A: %d, session %q", resp.StatusCode, id)
		}
		ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
		if status, body := post(t, s.resource, map[string]string{"Authorization": "Bearer " + tokenB, "Mcp-Session-Id": id}, ping); status != 404 {
			t.Fatalf("B on A's session: %d %s, want 404", status, body)
		}
		// A's next token (same issuer and subject) is still A.
		nextA := s.idp.token(idA, secretA, "mcp", s.resource)
		if status, body := post(t, s.resource, map[string]string{"Authorization": "Bearer " + nextA, "Mcp-Session-Id": id}, ping); status != 200 {
			t.Fatalf("A's next token on A's session: %d %s, want 200", status, body)
		}
	})

	t.Run("no token in the logs", func(t *testing.T) {
		logs := s.p.logs.String()
		for _, tok := range []string{tokenA, tokenB, expired} {
			if sig := tok[strings.LastIndex(tok, ".")+1:]; strings.Contains(logs, sig) {
				t.Fatal("a token's signature is in the server's log")
			}
		}
	})
}

func TestOAuthHydraTokensOverSSE(t *testing.T) {
	s := startOAuthServer(t, "sse")
	id, secret := s.idp.register("client-sse", "mcp", s.resource)
	resp := rawRequest(t, "GET", s.resource, nil, "")
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+s.origin+`/.well-known/oauth-protected-resource/sse"`) {
		t.Fatalf("no token: %d, WWW-Authenticate: %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	s.p.connect(bearerHeader(s.idp.token(id, secret, "mcp", s.resource)))
	if _, err := s.p.client.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("tools/list over SSE with a Hydra token: %v", err)
	}
}

func TestOAuthDoctorChecksTheIssuer(t *testing.T) {
	idp := startHydra(t)
	base := []string{"--image", testImage, "--name-prefix", "wd" + randomHex(4), "--podman-url", "unix://" + podmanSocket, "--transport", "http"}
	out, code := doctor(t, append(base, "--oauth-issuer", idp.issuer)...)
	// Hydra publishes two keys: its ID tokens' and its access tokens'.
	want := "issuer " + idp.issuer + ": metadata at " + idp.issuer + "/.well-known/openid-configuration, 2 signing key(s) at " + idp.issuer + "/.well-known/jwks.json"
	if l := line(out, "oauth"); code != 0 || !strings.HasPrefix(l, "ok ") || !strings.HasSuffix(l, want) {
		t.Fatalf("exit %d, oauth line %q, want it to end %q:\n%s", code, l, want, out)
	}
	out, code = doctor(t, append(base, "--oauth-issuer", idp.issuer+"/not-the-issuer")...)
	if l := line(out, "oauth"); code != 1 || !strings.HasPrefix(l, "FAIL ") || !strings.Contains(l, "no metadata for issuer") || !strings.Contains(out, "fix: check --oauth-issuer") {
		t.Fatalf("a wrong issuer: exit %d, oauth line %q:\n%s", code, l, out)
	}
}

func TestOAuthTypeScriptSDKFindsTheIssuerAndGetsAToken(t *testing.T) {
	if _, err := os.Stat(filepath.Join("tsclient", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK is not installed (run make setup): %v", err)
		}
		t.Skip("the TypeScript SDK is not installed; run make setup")
	}
	s := startOAuthServer(t, "http")
	id, secret := s.idp.register("ts-sdk", "mcp", s.resource)
	out, err := exec.Command("node", filepath.Join("tsclient", "oauth.mjs"), s.resource, id, secret, s.idp.issuer, "mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("the SDK's client: %v\n%s", err, out)
	}
	var got struct {
		Tools         int
		SessionID     string
		TokenAudience []string
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Tools == 0 || got.SessionID == "" || !slices.Equal(got.TokenAudience, []string{s.resource}) {
		t.Fatalf("got %+v (%v) from %s", got, err, out)
	}
}

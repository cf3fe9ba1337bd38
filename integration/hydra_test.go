package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// hydraBin is the Ory Hydra that hack/hydra/build.sh (run by `make setup`) builds.
var hydraBin = envOr("WINK_HYDRA_BIN", "/var/cache/wink-mcp/hydra/v2.3.0/bin/hydra")

// hydra is an Ory Hydra authorization server of the test's own, on free
// loopback ports, in memory, issuing JWT access tokens.
type hydra struct {
	t      *testing.T
	issuer string // also its public URL
	admin  string
}

// freePort returns a loopback port nothing listens on (for a moment).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startHydra starts a Hydra, stopped at cleanup. Without its binary the
// test skips, or fails when CI is set.
func startHydra(t *testing.T) *hydra {
	t.Helper()
	if _, err := os.Stat(hydraBin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and Hydra is missing (%v): run `make setup` (hack/hydra/build.sh)", err)
		}
		t.Skipf("Hydra is missing (%v): run `make setup` (hack/hydra/build.sh)", err)
	}
	public, admin := freePort(t), freePort(t)
	h := &hydra{t: t, issuer: fmt.Sprintf("http://127.0.0.1:%d", public), admin: fmt.Sprintf("http://127.0.0.1:%d", admin)}
	cmd := exec.Command(hydraBin, "serve", "all", "--dev")
	cmd.Env = append(os.Environ(), "DSN=memory", "SECRETS_SYSTEM="+randomHex(16), "URLS_SELF_ISSUER="+h.issuer,
		"STRATEGIES_ACCESS_TOKEN=jwt", "LOG_LEVEL=warn", "SQA_OPT_OUT=true",
		"SERVE_PUBLIC_HOST=127.0.0.1", fmt.Sprintf("SERVE_PUBLIC_PORT=%d", public),
		"SERVE_ADMIN_HOST=127.0.0.1", fmt.Sprintf("SERVE_ADMIN_PORT=%d", admin))
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("hydra log:\n%s", logs.String())
		}
	})
	waitUntil(t, 30*time.Second, "Hydra answering", func() bool {
		resp, err := http.Get(h.issuer + "/.well-known/openid-configuration")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return h
}

// register makes a client of the client_credentials grant that may ask
// for scope and the audiences, and returns its id and secret.
func (h *hydra) register(id string, scope string, audiences ...string) (string, string) {
	h.t.Helper()
	secret := "secret-" + randomHex(16)
	body, _ := json.Marshal(map[string]any{"client_id": id, "client_secret": secret, "grant_types": []string{"client_credentials"},
		"scope": scope, "audience": audiences, "token_endpoint_auth_method": "client_secret_basic"})
	h.send(http.MethodPost, h.admin+"/admin/clients", string(body), http.StatusCreated)
	return id, secret
}

// shortLived makes the client's access tokens expire after lifespan.
func (h *hydra) shortLived(id, lifespan string) {
	h.t.Helper()
	h.send(http.MethodPut, h.admin+"/admin/clients/"+id+"/lifespans",
		`{"client_credentials_grant_access_token_lifespan":"`+lifespan+`"}`, http.StatusOK)
}

// send makes an admin request and checks its status.
func (h *hydra) send(method, where, body string, want int) {
	h.t.Helper()
	req, _ := http.NewRequest(method, where, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != want {
		h.t.Fatalf("%s %s: %s: %s", method, where, resp.Status, b)
	}
}

// token gets an access token the normal way: POST /oauth2/token.
func (h *hydra) token(id, secret, scope, audience string) string {
	h.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "audience": {audience}}
	req, _ := http.NewRequest(http.MethodPost, h.issuer+"/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &tok); err != nil || resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		h.t.Fatalf("POST /oauth2/token: %s: %s", resp.Status, b)
	}
	return tok.AccessToken
}

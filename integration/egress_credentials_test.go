package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// credSecret is the credential's value: it must reach the credential's
// host, and appear nowhere else.
const credSecret = "wink-test-secret-7c1e9a4b"

// headerServer is an HTTPS server on this machine's loopback, with a
// certificate from a CA of the test's own (handed to --ca-bundle), that
// records the Authorization header of every request.
type headerServer struct {
	port string
	mu   sync.Mutex
	seen []string
}

func (h *headerServer) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// testCA makes a CA and returns its PEM and a TLS certificate it signed
// for localhost and 127.0.0.1.
func testCA(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	// A random serial: the tests tell two CAs apart by their PEM's first
	// line, which holds the serial and, with equal serials, is the same.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: serial.Add(serial, big.NewInt(1)), Subject: pkix.Name{CommonName: "wink test private CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func serveHeaders(t *testing.T, cert tls.Certificate, handler http.HandlerFunc) *headerServer {
	t.Helper()
	h := &headerServer{}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		h.mu.Unlock()
		if handler != nil {
			handler(w, r)
			return
		}
		fmt.Fprint(w, "reached "+r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, h.port, _ = net.SplitHostPort(ln.Addr().String())
	return h
}

// A credential reaches its host through the proxy, from a real container,
// and nothing else: the container sees a placeholder, trusts wink-mcp's CA
// and the --ca-bundle where its clients look, cannot read the CA's key or
// the value anywhere, and neither a redirect, the placeholder sent to
// another host, nor another host asked inside the credential's connection
// carries it; the value is in no log, checkpoint, patch or process list.
func TestEgressCredentialsInjected(t *testing.T) {
	api, other, bundle, creds := credentialServers(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	// --env-pass API_TOKEN would show the value: the placeholder hides it.
	p := start(t, startOptions{image: pythonImage, env: []string{"WINK_TEST_API_TOKEN=" + credSecret, "API_TOKEN=" + credSecret},
		args: []string{"--warm", "0", "--credentials", creds, "--ca-bundle", bundle, "--env-pass", "API_TOKEN", "--audit-log", audit,
			"--egress", "localhost:" + api.port, "--egress", "127.0.0.1:" + other.port}})

	// The placeholder, and the variables pointing the clients at the bundle.
	env := p.run("sh", "-c", `echo "$API_TOKEN $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $GIT_SSL_CAINFO"`)
	if got := strings.TrimSpace(env.Stdout); got != "wink-placeholder /etc/wink-mcp/ca-bundle.pem /etc/wink-mcp/extra-ca.pem /etc/wink-mcp/ca-bundle.pem" {
		t.Fatalf("environment: %q", got)
	}

	// The client sends the placeholder; the host gets the value. The proxy
	// is only reached by the explicit pattern, so the client talks to it
	// itself (NO_PROXY holds localhost).
	fetch := func(url string) string { return fetchWithToken(t, p, url) }
	if out := fetch("https://localhost:" + api.port + "/private"); !strings.Contains(out, "reached /private") {
		t.Fatalf("the credential's host: %q", out)
	}
	if got := api.requests(); len(got) != 1 || got[0] != "/private Bearer "+credSecret {
		t.Fatalf("the credential's host saw %q", got)
	}
	// The placeholder to another host stays the placeholder; that host is
	// trusted through --ca-bundle (its certificate is from the test's CA).
	if out := fetch("https://127.0.0.1:" + other.port + "/elsewhere"); !strings.Contains(out, "reached /elsewhere") {
		t.Fatalf("the other host: %q", out)
	}
	// A redirect to another host: urllib follows it, with a request of its
	// own to the other host, which gets no credential.
	if out := fetch("https://localhost:" + api.port + "/redirect"); !strings.Contains(out, "reached /landed") {
		t.Fatalf("after the redirect: %q", out)
	}
	for _, r := range other.requests() {
		if strings.Contains(r, credSecret) || !strings.HasSuffix(r, "Bearer wink-placeholder") {
			t.Fatalf("the other host saw %q", other.requests())
		}
	}

	// Another host asked inside the credential's connection: 421, sent nowhere.
	before := len(api.requests()) + len(other.requests())
	misdirected := pyStdin(t, p, `import socket, ssl, sys
port, other = sys.stdin.read().split()
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(("CONNECT localhost:%s HTTP/1.1\r\nHost: localhost:%s\r\n\r\n" % (port, port)).encode())
assert b" 200 " in s.recv(4096)
ctx = ssl.create_default_context(cafile="/etc/wink-mcp/ca-bundle.pem")
t = ctx.wrap_socket(s, server_hostname="localhost")
t.sendall(("GET /x HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer wink-placeholder\r\n\r\n" % other).encode())
print(t.recv(4096).decode(errors="replace"))
`, api.port+" "+other.port)
	if !strings.Contains(misdirected, "421") {
		t.Fatalf("another Host in the credential's connection: %q", misdirected)
	}
	if after := len(api.requests()) + len(other.requests()); after != before {
		t.Fatalf("the misdirected request reached a server: %q %q", api.requests(), other.requests())
	}

	// Neither the value nor the CA's key anywhere in the container: files,
	// every process's environment and command line. The searcher gets both
	// reversed, so that no call carries them as they are.
	keyPEM, err := os.ReadFile(filepath.Join(p.cache, "egress-ca", "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	keyLine := strings.Split(string(keyPEM), "\n")[1]
	found := searchContainer(t, p, "wink-placeholder", credSecret, keyLine)
	// The placeholder, in every process's environment, shows the search reads them.
	if strings.TrimSpace(found) != "control: True found: []" {
		t.Fatalf("the container holds the value or the CA's key: %s", found)
	}
	if key, err := os.Stat(filepath.Join(p.cache, "egress-ca", "ca-key.pem")); err != nil || key.Mode().Perm() != 0o600 {
		t.Fatalf("the CA's key on the host: %v %v", key, err)
	}

	// Nor in a checkpoint, the changes, the log, or any process's arguments.
	if res := p.call("workspace_checkpoint", map[string]any{"message": "after the calls"}); res.IsError {
		t.Fatalf("checkpoint: %s", textOf(res))
	}
	changes := textOf(p.call("workspace_changes", nil))
	ps, _ := exec.Command("ps", "-eo", "args").Output()
	auditLog, err := os.ReadFile(audit)
	if err != nil || len(auditLog) == 0 {
		t.Fatalf("the audit log: %v", err)
	}
	leaks := map[string]string{"changes": changes, "log": p.logs.String(), "ps": string(ps), "audit": string(auditLog)}
	_ = filepath.WalkDir(p.cache, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, err := os.ReadFile(path); err == nil {
				leaks[path] = string(data)
			}
		}
		return nil
	})
	for where, text := range leaks {
		if strings.Contains(text, credSecret) && !strings.HasSuffix(where, "ca-key.pem") {
			t.Errorf("the value is in %s", where)
		}
	}
	if !strings.Contains(p.logs.String(), `"credential":"api"`) {
		t.Fatalf("no log record names the credential")
	}
}

// Rootless Podman mounts the bundle the server, as its user, wrote in its
// cache directory, and the credential reaches its host.
func TestRootlessEgressCredentials(t *testing.T) {
	u := needRootless(t)
	caPEM, cert := testCA(t)
	api := serveHeaders(t, cert, nil)
	dir := u.dir(t)
	bundle, creds := writeTrustFiles(t, dir, caPEM, api.port, "")
	must(t, os.Chown(creds, u.uid, u.gid))
	p := start(t, startOptions{as: u, image: pythonImage, env: append(u.shellEnv(t), "WINK_TEST_API_TOKEN="+credSecret),
		args: append([]string{"--credentials", creds, "--ca-bundle", bundle, "--egress", "localhost:" + api.port}, rootlessArgs...)})
	if out := p.run("sh", "-c", `echo "$API_TOKEN"; cat /etc/wink-mcp/ca-bundle.pem /etc/ssl/certs/ca-certificates.crt | grep -c BEGIN`); !strings.HasPrefix(out.Stdout, "wink-placeholder\n") {
		t.Fatalf("rootless: %+v", out)
	}
	if out := fetchWithToken(t, p, "https://localhost:"+api.port+"/rootless"); !strings.Contains(out, "reached") {
		t.Fatalf("rootless: %q", out)
	}
	if got := api.requests(); len(got) != 1 || got[0] != "/rootless Bearer "+credSecret {
		t.Fatalf("the host saw %q", got)
	}
}

// fetchWithToken gets url from the workspace through the proxy, with
// "Authorization: Bearer $API_TOKEN", trusting the system bundle, and
// returns the body. NO_PROXY holds localhost, so the client is told to
// use the proxy for it.
func fetchWithToken(t *testing.T, p *proc, url string) string {
	t.Helper()
	return pyStdin(t, p, `import os, ssl, sys, urllib.request
os.environ.pop("no_proxy", None); os.environ.pop("NO_PROXY", None)
ctx = ssl.create_default_context(cafile="/etc/ssl/certs/ca-certificates.crt")
proxy = urllib.request.ProxyHandler({"https": "http://127.0.0.1:3128"})
opener = urllib.request.build_opener(proxy, urllib.request.HTTPSHandler(context=ctx))
req = urllib.request.Request(sys.stdin.read().strip(), headers={"Authorization": "Bearer " + os.environ.get("API_TOKEN", "none")})
print(opener.open(req, timeout=30).read().decode())
`, url)
}

// credentialServers starts the two HTTPS servers of the credential tests,
// under a CA of their own: api, the credential's host, which answers
// "reached PATH" and redirects /redirect to other, which records what
// it is sent; and writes the bundle of that CA and a credentials file
// for api (writeTrustFiles).
func credentialServers(t *testing.T) (api, other *headerServer, bundle, creds string) {
	t.Helper()
	caPEM, cert := testCA(t)
	other = serveHeaders(t, cert, nil)
	api = serveHeaders(t, cert, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "https://127.0.0.1:"+other.port+"/landed", http.StatusFound)
			return
		}
		fmt.Fprint(w, "reached "+r.URL.Path)
	})
	bundle, creds = writeTrustFiles(t, t.TempDir(), caPEM, api.port, "")
	return api, other, bundle, creds
}

// writeTrustFiles writes the private CA's bundle and a credentials file
// for api's port (with extra lines in its entry) and returns their paths.
func writeTrustFiles(t *testing.T, dir string, caPEM []byte, port, extra string) (bundle, creds string) {
	t.Helper()
	bundle, creds = filepath.Join(dir, "private-ca.pem"), filepath.Join(dir, "credentials.yaml")
	if err := os.WriteFile(bundle, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte(fmt.Sprintf(`credentials:
  api:
    hosts: ["localhost:%s"]
    bearer: {env: WINK_TEST_API_TOKEN}
    placeholder: API_TOKEN
%s`, port, extra)), 0o600); err != nil {
		t.Fatal(err)
	}
	return bundle, creds
}

// A profile's setup trusts --ca-bundle and its own ca_bundle (in the
// system bundle and SSL_CERT_FILE), which no other profile's session
// trusts, and a credential an entry gives one profile reaches
// neither a session without a profile nor one of another.
func TestEgressCABundleAndProfileCredentials(t *testing.T) {
	caPEM, cert := testCA(t)
	api := serveHeaders(t, cert, nil)
	line := strings.Split(string(caPEM), "\n")[1] // of the private CA, in every bundle the containers read
	ownPEM, _ := testCA(t)                        // the trusting profile's own ca_bundle
	own := filepath.Join(t.TempDir(), "own-ca.pem")
	must(t, os.WriteFile(own, ownPEM, 0o644))
	ownLine := strings.Split(string(ownPEM), "\n")[1]
	file, nonce := profilesFile(t, fmt.Sprintf(`profiles:
  trusting-NONCE:
    image: PY_IMAGE
    ca_bundle: %s
    setup:
      - grep -qF '%s' /etc/ssl/certs/ca-certificates.crt && grep -qF '%s' "$SSL_CERT_FILE" && grep -qF '%s' "$SSL_CERT_FILE" && touch /setup-trusted
  plain-NONCE:
    image: PY_IMAGE
`, own, line, line, ownLine))
	bundle, creds := writeTrustFiles(t, t.TempDir(), caPEM, api.port, "    profiles: [trusting-"+nonce+"]\n")
	p := start(t, startOptions{image: pythonImage, env: []string{"WINK_TEST_API_TOKEN=" + credSecret},
		args: []string{"--warm", "0", "--profiles", file, "--credentials", creds, "--ca-bundle", bundle, "--egress", "localhost:" + api.port}})
	for _, profile := range []string{"", "plain-" + nonce} {
		if profile != "" {
			p.useProfile(profile, true)
		}
		if out := p.run("sh", "-c", "grep -cF \"$1\" /etc/ssl/certs/ca-certificates.crt; grep -cF \"$2\" /etc/ssl/certs/ca-certificates.crt", "sh", line, ownLine); out.Stdout != "1\n0\n" {
			t.Fatalf("profile %q trusts %q (want the server's bundle only)", profile, out.Stdout)
		}
		if out := fetchWithToken(t, p, "https://localhost:"+api.port+"/"+profile); !strings.Contains(out, "reached") {
			t.Fatalf("profile %q: %q", profile, out)
		}
	}
	p.useProfile("trusting-"+nonce, true)
	if out := p.run("sh", "-c", `test -e /setup-trusted && echo "$API_TOKEN"`); strings.TrimSpace(out.Stdout) != "wink-placeholder" {
		t.Fatalf("the setup did not trust the bundle, or no placeholder: %+v", out)
	}
	fetchWithToken(t, p, "https://localhost:"+api.port+"/trusting")
	want := []string{"/ Bearer none", "/plain-" + nonce + " Bearer none", "/trusting Bearer " + credSecret}
	if got := api.requests(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the host saw %q, want %q", got, want)
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// searchScript looks for needles (on stdin, apart by spaces, reversed, so that
// no call carries them as they are) in every file of the container but
// /proc, /sys and /dev, and in every process's environment and command
// line; the first needle is a control, which must be found in an
// environment, to show that the search reads them. It prints
// "control: True found: []" when only the control was found.
const searchScript = `import os, sys
needles = [n[::-1].encode() for n in sys.stdin.read().split()]
hits, control = [], []
def look(path, data):
    for i, n in enumerate(needles):
        if n in data:
            (control if i == 0 else hits).append(path)
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for f in files:
        path = os.path.join(root, f)
        try:
            if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) < 64 << 20:
                look(path, open(path, "rb").read())
        except OSError:
            pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for part in ("environ", "cmdline"):
            try:
                look("/proc/%s/%s" % (pid, part), open("/proc/%s/%s" % (pid, part), "rb").read())
            except OSError:
                pass
print("control:", any("environ" in c for c in control), "found:", hits)
`

// searchContainer runs searchScript in p's container for needles,
// control the one a process's environment must hold, and returns what it
// printed.
func searchContainer(t *testing.T, p *proc, control string, needles ...string) string {
	t.Helper()
	in := reverse(control)
	for _, n := range needles {
		in += " " + reverse(n)
	}
	return pyStdin(t, p, searchScript, in)
}

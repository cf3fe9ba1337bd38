package egress

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseCredentialsAcceptsEveryKind(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := `credentials:
  github:
    hosts: [github.com, api.github.com]
    bearer: {env: GH}
    placeholder: GH_TOKEN
  git:
    hosts: [git.example.org]
    basic: {username: oauth2, password: {file: ` + file + `}}
  api:
    hosts: ["*.api.example.net", "api.example.net:8443"]
    header: x-api-key
    value: {env: KEY}
`
	cs, err := ParseCredentials("c.yaml", []byte(data), env(map[string]string{"GH": "ghp_1", "KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cs.Names(), ","); got != "api,git,github" {
		t.Fatalf("names %s", got)
	}
	set := CredentialSet{cs.Get("github"), cs.Get("git"), cs.Get("api")}
	cases := []struct {
		host       string
		port       int
		want       string
		header, in string
	}{
		{"api.github.com", 443, "github", "Authorization", "Bearer ghp_1"},
		{"github.com", 80, "", "", ""}, // never over plain HTTP
		{"github.com.evil.org", 443, "", "", ""},
		{"git.example.org", 443, "git", "Authorization", "Basic b2F1dGgyOmZyb20tZmlsZQ=="},
		{"x.api.example.net", 443, "api", "X-Api-Key", "k"},
		{"api.example.net", 443, "", "", ""}, // the wildcard is for names under it
		{"api.example.net", 8443, "api", "X-Api-Key", "k"},
	}
	for _, tc := range cases {
		c := set.For(tc.host, tc.port)
		switch {
		case tc.want == "" && c != nil:
			t.Errorf("%s:%d got %s", tc.host, tc.port, c)
		case tc.want != "" && (c == nil || c.Name != tc.want || c.header != tc.header || c.value != tc.in):
			t.Errorf("%s:%d got %v", tc.host, tc.port, c)
		}
	}
	if got := set.ShownEnv(); len(got) != 1 || got["GH_TOKEN"] != Placeholder {
		t.Fatalf("shown %v", got)
	}
	if s := cs.Get("github").String(); strings.Contains(s, "ghp_1") {
		t.Fatalf("String shows the value: %s", s)
	}
}

func TestParseCredentialsNamesTheEntryAndField(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"T": "tok", "NL": "a\nb", "PH": Placeholder})
	cases := []struct{ name, data, want string }{
		{"unknown top key", "creds: {}", "creds: unknown key"},
		{"no entries", "credentials: {}", "at least one"},
		{"bad name", "credentials:\n  Git Hub: {hosts: [a.com], bearer: {env: T}}", "Git Hub: an entry's name"},
		{"unknown entry key", "credentials:\n  a: {hosts: [a.com], bearer: {env: T}, scope: x}", "a.scope: unknown key"},
		{"no hosts", "credentials:\n  a: {bearer: {env: T}}", "a.hosts: missing"},
		{"empty hosts", "credentials:\n  a: {hosts: [], bearer: {env: T}}", "a.hosts: must be a list"},
		{"bare star", "credentials:\n  a: {hosts: ['*'], bearer: {env: T}}", "a.hosts:"},
		{"top-level wildcard", "credentials:\n  a: {hosts: ['*.com'], bearer: {env: T}}", "a wildcard needs a domain with a dot"},
		{"bad port", "credentials:\n  a: {hosts: ['a.com:0'], bearer: {env: T}}", "a.hosts: \"a.com:0\": port"},
		{"no kind", "credentials:\n  a: {hosts: [a.com]}", "a: needs exactly one of bearer:, basic: or header: (it has 0)"},
		{"two kinds", "credentials:\n  a: {hosts: [a.com], bearer: {env: T}, header: X, value: {env: T}}", "(it has 2)"},
		{"missing env", "credentials:\n  a: {hosts: [a.com], bearer: {env: NOPE}}", "a.bearer.env: the server's environment has no NOPE"},
		{"missing file", "credentials:\n  a: {hosts: [a.com], bearer: {file: /no/such/file}}", "a.bearer.file:"},
		{"literal value", "credentials:\n  a: {hosts: [a.com], bearer: tok}", "a.bearer: must be {env: NAME} or {file: PATH}"},
		{"unknown source", "credentials:\n  a: {hosts: [a.com], bearer: {vault: x}}", "a.bearer.vault: unknown key"},
		{"line break", "credentials:\n  a: {hosts: [a.com], bearer: {env: NL}}", "a.bearer: the value holds a line break"},
		{"placeholder as value", "credentials:\n  a: {hosts: [a.com], bearer: {env: PH}}", "the placeholder itself"},
		{"header without value", "credentials:\n  a: {hosts: [a.com], header: X-Key}", "a.value: missing"},
		{"value without header", "credentials:\n  a: {hosts: [a.com], bearer: {env: T}, value: {env: T}}", "a.value: only goes with header:"},
		{"bad header", "credentials:\n  a: {hosts: [a.com], header: 'X Key', value: {env: T}}", "a.header: must be an HTTP header name"},
		{"Host header", "credentials:\n  a: {hosts: [a.com], header: host, value: {env: T}}", "cannot be set"},
		{"basic without user", "credentials:\n  a: {hosts: [a.com], basic: {password: {env: T}}}", "a.basic: needs username:"},
		{"basic colon user", "credentials:\n  a: {hosts: [a.com], basic: {username: 'a:b', password: {env: T}}}", "a.basic.username"},
		{"bad placeholder", "credentials:\n  a: {hosts: [a.com], bearer: {env: T}, placeholder: 'GH TOKEN'}", "a.placeholder: must be the name"},
		{"proxy placeholder", "credentials:\n  a: {hosts: [a.com], bearer: {env: T}, placeholder: https_proxy}", "egress proxy's"},
		{"overlap", "credentials:\n  a: {hosts: ['*.a.com'], bearer: {env: T}}\n  b: {hosts: [x.a.com], bearer: {env: T}}", "b.hosts: x.a.com is also in a's hosts"},
		{"duplicate", "credentials:\n  a: {hosts: [a.com], bearer: {env: T}}\n  a: {hosts: [b.com], bearer: {env: T}}", ""},
		{"not yaml", "credentials: [", "c.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCredentials("c.yaml", []byte(tc.data), vars)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "--credentials c.yaml") {
				t.Fatalf("error %q, want it to name %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "tok") {
				t.Fatalf("the error shows a value: %s", err)
			}
		})
	}
}

// A session gets the entries for every session and its own profile's,
// never another profile's.
func TestCredentialsForProfile(t *testing.T) {
	t.Parallel()
	data := `credentials:
  shared: {hosts: [a.example.com], bearer: {env: T}}
  node: {hosts: [b.example.com], bearer: {env: T}, profiles: [node]}
  go: {hosts: [c.example.com], bearer: {env: T}, profiles: [go, both]}
`
	cs, err := ParseCredentials("c.yaml", []byte(data), env(map[string]string{"T": "tok"}))
	if err != nil {
		t.Fatal(err)
	}
	names := func(set CredentialSet) string {
		var out []string
		for _, c := range set {
			out = append(out, c.Name)
		}
		return strings.Join(out, ",")
	}
	for profile, want := range map[string]string{"": "shared", "node": "node,shared", "go": "go,shared", "both": "go,shared", "other": "shared"} {
		if got := names(cs.ForProfile(profile)); got != want {
			t.Errorf("profile %q got %s, want %s", profile, got, want)
		}
	}
	if c := cs.ForProfile("node").For("c.example.com", 443); c != nil {
		t.Fatalf("a node session got %s", c)
	}
}

func TestAuthorityIsMadeOnceAndKeptPrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	cas := make([]*Authority, 8)
	errs := make([]error, 8)
	for i := range cas {
		wg.Go(func() { cas[i], errs[i] = LoadAuthority(dir) })
	}
	wg.Wait()
	for i := range cas {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if string(cas[i].CertPEM()) != string(cas[0].CertPEM()) {
			t.Fatal("two processes made two CAs")
		}
	}
	key := filepath.Join(dir, CADirName, "ca-key.pem")
	info, err := os.Stat(key)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key %v %v", info.Mode(), err)
	}
	if strings.Contains(string(cas[0].CertPEM()), "PRIVATE") {
		t.Fatal("the certificate carries the key")
	}
	leaf, err := cas[0].leaf("example.com")
	if err != nil || leaf.Leaf.DNSNames[0] != "example.com" || leaf.Leaf.NotAfter.Sub(leaf.Leaf.NotBefore) > leafLifetime+2*leafRenewal {
		t.Fatalf("leaf %v %v", leaf, err)
	}
	if again, _ := cas[0].leaf("example.com"); again != leaf {
		t.Fatal("the leaf was not kept")
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAuthority(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a readable key was accepted: %v", err)
	}
}

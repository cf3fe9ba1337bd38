package egress

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Placeholder is the value a session's container sees in the variable a
// credential names (placeholder:), so that a client believes it is logged
// in; the proxy replaces it, for the credential's hosts only.
const Placeholder = "wink-placeholder"

// Bounds of a credentials file.
const (
	maxCredentialsFile = 1 << 20
	maxSecretBytes     = 16 << 10
)

var (
	credentialName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)
	envVarName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	headerName     = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
)

// Credential is one entry of the credentials file: a header the proxy sets
// on every request to the hosts it is for. Its value comes from the
// server's environment or a file, never from a session, and is shown by
// no method (String and the log name the entry only).
type Credential struct {
	// Name is the entry's key in the file.
	Name string
	// Hosts are the host patterns it is for (a name, or *.domain, with an
	// optional :port; 443 without).
	Hosts  Policy
	header string
	value  string
	// ShowAs names a variable the session's containers get set to
	// Placeholder ("" for none).
	ShowAs string
	// Profiles, when set, are the only profiles whose sessions get it;
	// nil gives it to every session.
	Profiles []string
}

// String names the credential, never its value.
func (c *Credential) String() string { return "credential " + c.Name }

// Credentials are the entries of a credentials file, by name.
type Credentials struct {
	Path   string
	byName map[string]*Credential
}

// Names returns the entries' names, sorted.
func (cs *Credentials) Names() []string {
	if cs == nil {
		return nil
	}
	out := make([]string, 0, len(cs.byName))
	for n := range cs.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the entry called name, or nil.
func (cs *Credentials) Get(name string) *Credential {
	if cs == nil {
		return nil
	}
	return cs.byName[name]
}

// ForProfile returns the credentials of a session of the named profile
// ("" for none): those for every session, and those naming the profile.
func (cs *Credentials) ForProfile(profile string) CredentialSet {
	var set CredentialSet
	for _, n := range cs.Names() {
		c := cs.byName[n]
		if c.Profiles == nil || profile != "" && slices.Contains(c.Profiles, profile) {
			set = append(set, c)
		}
	}
	return set
}

// Patterns returns the host patterns of the credential as written.
func (c *Credential) Patterns() []string { return c.Hosts.Patterns() }

// CredentialSet is the credentials one session's proxy injects.
type CredentialSet []*Credential

// For returns the credential for host and port, or nil.
func (set CredentialSet) For(host string, port int) *Credential {
	for _, c := range set {
		if _, ok := c.Hosts.Match(host, port); ok {
			return c
		}
	}
	return nil
}

// ShownEnv is the environment that shows the set's placeholders.
func (set CredentialSet) ShownEnv() map[string]string {
	env := map[string]string{}
	for _, c := range set {
		if c.ShowAs != "" {
			env[c.ShowAs] = Placeholder
		}
	}
	return env
}

// apply sets the credential's header on h, replacing whatever the client
// sent under that name (the placeholder, or a value of its own); a nil
// credential sets nothing.
func (c *Credential) apply(h http.Header) {
	if c == nil {
		return
	}
	h.Del(c.header)
	h.Set(c.header, c.value)
}

// LoadCredentials reads and checks the credentials file at path. lookup
// reads the server's environment.
func LoadCredentials(path string, lookup func(string) (string, bool)) (*Credentials, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--credentials: %w", err)
	}
	if info.Size() > maxCredentialsFile {
		return nil, fmt.Errorf("--credentials %s: %d bytes, more than the %d a credentials file may hold", path, info.Size(), maxCredentialsFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--credentials: %w", err)
	}
	return ParseCredentials(path, data, lookup)
}

// ParseCredentials checks the credentials file data, read from path
// (which errors name). Errors name the entry and the field, never a value.
func ParseCredentials(path string, data []byte, lookup func(string) (string, bool)) (*Credentials, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("--credentials %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	fail := func(n *yaml.Node, where, why string, args ...any) error {
		return fmt.Errorf("--credentials %s:%d: %s: %s (see docs/network.md#credentials-the-model-never-sees)", path, n.Line, where, fmt.Sprintf(why, args...))
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("--credentials %s: the file must be a mapping with a credentials: key", path)
	}
	doc := root.Content[0]
	var entries *yaml.Node
	for i := 0; i < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Value != "credentials" {
			return nil, fail(k, k.Value, "unknown key; the file has credentials: only")
		}
		entries = v
	}
	if entries == nil || entries.Kind != yaml.MappingNode || len(entries.Content) == 0 {
		return nil, fail(doc, "credentials", "must be a mapping of entry names to entries, with at least one")
	}
	cs := &Credentials{Path: path, byName: map[string]*Credential{}}
	for i := 0; i < len(entries.Content); i += 2 {
		k, v := entries.Content[i], entries.Content[i+1]
		if !credentialName.MatchString(k.Value) {
			return nil, fail(k, k.Value, "an entry's name is lower-case letters, digits, '.', '_' and '-', at most 40")
		}
		if cs.byName[k.Value] != nil {
			return nil, fail(k, k.Value, "named twice")
		}
		c, err := parseCredential(k.Value, v, lookup, fail)
		if err != nil {
			return nil, err
		}
		for _, other := range cs.byName {
			if clash := overlap(c.Hosts, other.Hosts); clash != "" {
				return nil, fail(k, c.Name+".hosts", "%s is also in %s's hosts; a host gets one credential", clash, other.Name)
			}
		}
		cs.byName[c.Name] = c
	}
	return cs, nil
}

type failFunc func(n *yaml.Node, where, why string, args ...any) error

func parseCredential(name string, v *yaml.Node, lookup func(string) (string, bool), fail failFunc) (*Credential, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fail(v, name, "must be a mapping with hosts: and one of bearer:, basic: or header: with value:")
	}
	c := &Credential{Name: name}
	var hosts []string
	var kinds []string
	var headerNode, valueNode *yaml.Node
	for i := 0; i < len(v.Content); i += 2 {
		k, f := v.Content[i], v.Content[i+1]
		where := name + "." + k.Value
		switch k.Value {
		case "hosts":
			if f.Kind != yaml.SequenceNode || len(f.Content) == 0 {
				return nil, fail(f, where, "must be a list of at least one host pattern (example.com, *.example.com, example.com:8443)")
			}
			for _, h := range f.Content {
				if h.Kind != yaml.ScalarNode {
					return nil, fail(h, where, "a host pattern is a string")
				}
				hosts = append(hosts, h.Value)
			}
		case "bearer":
			s, err := secret(f, where, lookup, fail)
			if err != nil {
				return nil, err
			}
			c.header, c.value = "Authorization", "Bearer "+s
			kinds = append(kinds, k.Value)
		case "basic":
			user, pass, err := basicAuth(f, where, lookup, fail)
			if err != nil {
				return nil, err
			}
			c.header, c.value = "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
			kinds = append(kinds, k.Value)
		case "header":
			headerNode = f
			kinds = append(kinds, k.Value)
		case "value":
			valueNode = f
		case "placeholder":
			if f.Kind != yaml.ScalarNode || !envVarName.MatchString(f.Value) {
				return nil, fail(f, where, "must be the name of an environment variable (letters, digits and '_')")
			}
			if slices.Contains(proxyVariables, strings.ToUpper(f.Value)) {
				return nil, fail(f, where, "%s is the egress proxy's", f.Value)
			}
			c.ShowAs = f.Value
		case "profiles":
			if f.Kind != yaml.SequenceNode || len(f.Content) == 0 {
				return nil, fail(f, where, "must be a list of at least one profile name (leave it out for every session)")
			}
			c.Profiles = []string{}
			for _, p := range f.Content {
				if p.Kind != yaml.ScalarNode || !credentialName.MatchString(p.Value) {
					return nil, fail(p, where, "a profile name is lower-case letters, digits, '.', '_' and '-'")
				}
				c.Profiles = append(c.Profiles, p.Value)
			}
		default:
			return nil, fail(k, where, "unknown key; an entry has hosts:, bearer:, basic:, header: with value:, placeholder: and profiles:")
		}
	}
	if len(hosts) == 0 {
		return nil, fail(v, name+".hosts", "missing: name the hosts the credential is for")
	}
	policy, err := ParsePolicy(hosts)
	if err != nil {
		return nil, fail(v, name+".hosts", "%s", strings.TrimPrefix(err.Error(), "--egress "))
	}
	for i := range policy.rules {
		if !policy.rules[i].PortGiven {
			policy.rules[i].Ports = []int{443} // never over plain HTTP
		}
	}
	c.Hosts = policy
	switch {
	case len(kinds) != 1:
		return nil, fail(v, name, "needs exactly one of bearer:, basic: or header: (it has %d)", len(kinds))
	case kinds[0] == "header":
		if headerNode.Kind != yaml.ScalarNode || !headerName.MatchString(headerNode.Value) {
			return nil, fail(headerNode, name+".header", "must be an HTTP header name")
		}
		if strings.EqualFold(headerNode.Value, "Host") || strings.HasPrefix(strings.ToLower(headerNode.Value), "proxy-") {
			return nil, fail(headerNode, name+".header", "%s cannot be set by a credential", headerNode.Value)
		}
		if valueNode == nil {
			return nil, fail(v, name+".value", "missing: header: needs value: {env: NAME} or {file: PATH}")
		}
		s, err := secret(valueNode, name+".value", lookup, fail)
		if err != nil {
			return nil, err
		}
		c.header, c.value = http.CanonicalHeaderKey(headerNode.Value), s
	case valueNode != nil:
		return nil, fail(valueNode, name+".value", "only goes with header:")
	}
	return c, nil
}

// proxyVariables are the container's proxy settings, which no placeholder
// may replace.
var proxyVariables = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}

func basicAuth(f *yaml.Node, where string, lookup func(string) (string, bool), fail failFunc) (user, pass string, err error) {
	if f.Kind != yaml.MappingNode {
		return "", "", fail(f, where, "must be a mapping with username: and password: {env: NAME} or {file: PATH}")
	}
	var passNode *yaml.Node
	for i := 0; i < len(f.Content); i += 2 {
		k, v := f.Content[i], f.Content[i+1]
		switch k.Value {
		case "username":
			if v.Kind != yaml.ScalarNode || v.Value == "" || strings.ContainsAny(v.Value, ":\r\n") {
				return "", "", fail(v, where+".username", "must be a name without ':' or line breaks")
			}
			user = v.Value
		case "password":
			passNode = v
		default:
			return "", "", fail(k, where+"."+k.Value, "unknown key; basic: has username: and password:")
		}
	}
	if user == "" || passNode == nil {
		return "", "", fail(f, where, "needs username: and password:")
	}
	pass, err = secret(passNode, where+".password", lookup, fail)
	return user, pass, err
}

// secret reads a value source, {env: NAME} or {file: PATH}.
func secret(f *yaml.Node, where string, lookup func(string) (string, bool), fail failFunc) (string, error) {
	if f.Kind != yaml.MappingNode || len(f.Content) != 2 {
		return "", fail(f, where, "must be {env: NAME} or {file: PATH}: a value comes from the server's environment or a file, never written here")
	}
	k, v := f.Content[0], f.Content[1]
	var s string
	switch k.Value {
	case "env":
		got, ok := lookup(v.Value)
		if !ok || got == "" {
			return "", fail(v, where+".env", "the server's environment has no %s (or it is empty); set it before starting wink-mcp", v.Value)
		}
		s = got
	case "file":
		info, err := os.Stat(v.Value)
		if err != nil {
			return "", fail(v, where+".file", "%v", err)
		}
		if info.Size() > maxSecretBytes {
			return "", fail(v, where+".file", "%s holds %d bytes, more than the %d a credential may", v.Value, info.Size(), maxSecretBytes)
		}
		data, err := os.ReadFile(v.Value)
		if err != nil {
			return "", fail(v, where+".file", "%v", err)
		}
		s = strings.TrimRight(string(data), "\r\n")
		if s == "" {
			return "", fail(v, where+".file", "%s is empty", v.Value)
		}
	default:
		return "", fail(k, where+"."+k.Value, "unknown key; a value is {env: NAME} or {file: PATH}")
	}
	if len(s) > maxSecretBytes {
		return "", fail(v, where, "the value is %d bytes, more than the %d a credential may", len(s), maxSecretBytes)
	}
	if strings.ContainsAny(s, "\r\n\x00") {
		return "", fail(v, where, "the value holds a line break or NUL, which a header cannot carry")
	}
	if s == Placeholder {
		return "", fail(v, where, "the value is the placeholder itself")
	}
	return s, nil
}

// overlap returns a host both policies match, or "".
func overlap(a, b Policy) string {
	for _, ra := range a.rules {
		for _, rb := range b.rules {
			for _, port := range ra.Ports {
				if !contains(rb.Ports, port) {
					continue
				}
				switch {
				case !ra.Wildcard && matchRule(rb, ra.Host):
					return ra.Pattern
				case !rb.Wildcard && matchRule(ra, rb.Host):
					return rb.Pattern
				case ra.Wildcard && rb.Wildcard && (ra.Host == rb.Host || strings.HasSuffix(ra.Host, "."+rb.Host) || strings.HasSuffix(rb.Host, "."+ra.Host)):
					return ra.Pattern
				}
			}
		}
	}
	return ""
}

func matchRule(r Rule, host string) bool {
	if r.Wildcard {
		return strings.HasSuffix(host, "."+r.Host)
	}
	return r.Host == host
}

package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Lifetimes of the certificates the Authority makes.
const (
	// caLifetime is how long wink-mcp's CA is valid; `doctor` shows when
	// it ends, and removing its directory makes a new one.
	caLifetime = 5 * 365 * 24 * time.Hour
	// leafLifetime is how long a host's certificate is valid: short, so
	// one copied out of a session is soon worthless.
	leafLifetime = 24 * time.Hour
	// leafRenewal is how long before its end a cached leaf is replaced.
	leafRenewal = time.Hour
	// maxLeaves bounds the leaves kept in memory.
	maxLeaves = 1024
)

// CADirName is the directory of a cache directory that holds the CA.
const CADirName = "egress-ca"

// Authority is wink-mcp's own certificate authority, made once per cache
// directory, with which the proxy terminates TLS for the hosts a credential
// is for. Its private key stays in the cache directory (mode 0600) and in
// this process; no container ever gets it. It is safe for concurrent use.
type Authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// LoadAuthority returns the CA of cacheDir, making it the first time (two
// processes making it at once agree on one).
func LoadAuthority(cacheDir string) (*Authority, error) {
	dir := filepath.Join(cacheDir, CADirName)
	a, err := readAuthority(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return a, err
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the cache directory for the egress CA: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".egress-ca-")
	if err != nil {
		return nil, fmt.Errorf("making the egress CA: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := writeAuthority(tmp); err != nil {
		return nil, err
	}
	// A directory renamed onto one that exists fails: then another process
	// made it first, and that one is read.
	_ = os.Rename(tmp, dir)
	return readAuthority(dir)
}

// ReadAuthority returns the CA of cacheDir without making one: an error
// wrapping os.ErrNotExist when there is none yet.
func ReadAuthority(cacheDir string) (*Authority, error) {
	return readAuthority(filepath.Join(cacheDir, CADirName))
}

func writeAuthority(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("making the egress CA's key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "wink-mcp egress CA " + now.UTC().Format("2006-01-02"), Organization: []string{"wink-mcp"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("making the egress CA: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the egress CA's key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return fmt.Errorf("writing the egress CA's key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("writing the egress CA: %w", err)
	}
	return nil
}

func readAuthority(dir string) (*Authority, error) {
	keyPath := filepath.Join(dir, "ca-key.pem")
	info, err := os.Stat(keyPath)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the egress CA's key %s has mode %04o: others may read it; run chmod 600 on it, or remove %s to make a new CA",
			keyPath, info.Mode().Perm(), dir)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("reading the egress CA's key: %w", err)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, fmt.Errorf("reading the egress CA: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	cb, _ := pem.Decode(certPEM)
	if kb == nil || cb == nil {
		return nil, fmt.Errorf("the egress CA in %s is damaged; remove the directory to make a new one", dir)
	}
	anyKey, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	key, ok := anyKey.(*ecdsa.PrivateKey)
	if err != nil || !ok {
		return nil, fmt.Errorf("the egress CA's key in %s is damaged; remove the directory to make a new one", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil || !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("the egress CA in %s is damaged or not the key's; remove the directory to make a new one", dir)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("the egress CA in %s expired on %s; remove the directory to make a new one", dir, cert.NotAfter.Format(time.DateOnly))
	}
	return &Authority{cert: cert, certPEM: certPEM, key: key, leaves: map[string]*tls.Certificate{}}, nil
}

// CertPEM returns the CA's certificate, which the session's containers trust.
func (a *Authority) CertPEM() []byte { return a.certPEM }

// NotAfter returns when the CA's certificate ends.
func (a *Authority) NotAfter() time.Time { return a.cert.NotAfter }

// leaf returns a certificate for host signed by the CA, made on first use
// and kept in memory until it nears its end.
func (a *Authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.leaves[host]; ok && time.Until(c.Leaf.NotAfter) > leafRenewal {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(a.cert.NotAfter) {
		tmpl.NotAfter = a.cert.NotAfter
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("making a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key, Leaf: leaf}
	if len(a.leaves) >= maxLeaves { // a wildcard's many names: start again
		clear(a.leaves)
	}
	a.leaves[host] = c
	return c, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

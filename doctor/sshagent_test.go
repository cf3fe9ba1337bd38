package doctor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/agent"

	"github.com/wink-mcp/wink-mcp/workspace"
)

// The ssh-agent line says off, a dead socket, an empty agent and an empty
// known_hosts, and counts keys and entries, against a real agent protocol
// server on a socket.
func TestSSHAgentCheck(t *testing.T) {
	cfg := workspace.DefaultConfig()
	if r := (&doctor{cfg: cfg}).sshAgent(context.Background()); r.Status != OK || !strings.Contains(r.Detail, "off") {
		t.Fatalf("without --ssh-agent: %+v", r)
	}
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	os.WriteFile(known, nil, 0o644)
	cfg.SSHAgent = &workspace.SSHAgent{Socket: filepath.Join(dir, "agent.sock"), KnownHosts: known}
	if r := (&doctor{cfg: cfg}).sshAgent(context.Background()); r.Status != Fail || !strings.Contains(r.Detail, "does not answer") {
		t.Fatalf("no agent: %+v", r)
	}
	keyring := agent.NewKeyring()
	ln, err := net.Listen("unix", cfg.SSHAgent.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go agent.ServeAgent(keyring, c)
		}
	}()
	if r := (&doctor{cfg: cfg}).sshAgent(context.Background()); r.Status != Warn || !strings.Contains(r.Detail, "holds 0 keys") {
		t.Fatalf("an empty agent: %+v", r)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	keyring.Add(agent.AddedKey{PrivateKey: priv})
	if r := (&doctor{cfg: cfg}).sshAgent(context.Background()); r.Status != Warn || !strings.Contains(r.Detail, "0 entries") {
		t.Fatalf("an empty known_hosts: %+v", r)
	}
	os.WriteFile(known, []byte("# a comment\n[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"), 0o644)
	if r := (&doctor{cfg: cfg}).sshAgent(context.Background()); r.Status != OK || !strings.Contains(r.Detail, "holds 1 keys") || !strings.Contains(r.Detail, "1 entries") {
		t.Fatalf("a key and a host: %+v", r)
	}
	os.WriteFile(known, []byte("@bogus-marker host ssh-ed25519 AAAA\n"), 0o644)
	if r := (&doctor{cfg: cfg}).sshAgent(context.Background()); r.Status != Fail {
		t.Fatalf("a malformed known_hosts: %+v", r)
	}
}

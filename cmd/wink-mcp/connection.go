package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.podman.io/common/pkg/config"
)

// connectionEnvs name a connection as --podman-connection does:
// CONTAINER_CONNECTION is Podman's own, PODMAN_CONNECTION its
// spelling in wink-mcp's issue tracker and some guides.
var connectionEnvs = []string{"CONTAINER_CONNECTION", "PODMAN_CONNECTION"}

// podmanService is where the --podman-url and --podman-connection flags
// and their variables left the choice of the Podman service, and, once
// resolved, the service the engine is built to drive.
type podmanService struct {
	urlFlag, connectionFlag, identityFlag bool   // given on the command line
	connection                            string // named by the flag or a variable
	// url is the Podman service to use; "" tries the root socket, then
	// the rootless one under $XDG_RUNTIME_DIR.
	url string
	// identity is the SSH key for ssh:// URLs.
	identity string
	// machine says url is a podman machine's, as its connection says:
	// Podman trusts the machine's host key without known_hosts, and so
	// does the engine.
	machine bool
	// tlsCert, tlsKey and tlsCA are the client certificate, its key and
	// the CA of a tcp:// service, from its connection; "" for none.
	tlsCert, tlsKey, tlsCA string
}

// resolvePodmanService chooses the Podman service and its identity as
// Podman's remote client does, from the first of: --podman-url,
// --podman-connection, CONTAINER_CONNECTION (or PODMAN_CONNECTION),
// CONTAINER_HOST (or PODMAN_BASE_URL, with CONTAINER_SSHKEY), the default
// connection of containers.conf and podman-connections.json. With none the
// engine tries the local sockets. It sets s's service and returns the
// name of the connection used, "" for none; a named connection that does
// not exist is an error listing the known ones.
func resolvePodmanService(s *podmanService) (string, error) {
	switch {
	case s.urlFlag && s.connectionFlag:
		return "", errors.New("--podman-url and --podman-connection both name the Podman service; pass one of them")
	case s.urlFlag:
		return "", nil
	case s.connection == "" && s.url != "":
		return "", nil // CONTAINER_HOST
	}
	conf, err := config.New(nil)
	if err != nil {
		if s.connection == "" {
			return "", nil // no default to be had: the local sockets
		}
		return "", fmt.Errorf("%s %q: reading Podman's configuration (containers.conf): %w", connectionSource(*s), s.connection, err)
	}
	var c *config.Connection
	if s.connection == "" {
		if c, err = conf.GetConnection("", true); err != nil {
			return "", nil // none is the default: the local sockets
		}
	} else if c, err = conf.GetConnection(s.connection, false); err != nil {
		return "", unknownConnection(conf, *s, err)
	}
	s.url, s.machine = c.URI, c.IsMachine
	s.tlsCert, s.tlsKey, s.tlsCA = c.TLSCert, c.TLSKey, c.TLSCA
	if !s.identityFlag && c.Identity != "" {
		s.identity = c.Identity
	}
	return c.Name, nil
}

// connectionSource says where a connection's name came from, for errors.
func connectionSource(s podmanService) string {
	if s.connectionFlag {
		return "--podman-connection"
	}
	return "--podman-connection (from " + strings.Join(connectionEnvs, " or ") + ")"
}

// unknownConnection is the error for a named connection that does not
// exist, listing the ones that do.
func unknownConnection(conf *config.Config, s podmanService, err error) error {
	all, lerr := conf.GetAllConnections()
	if lerr != nil {
		return fmt.Errorf("%s %q: %w; listing the known connections failed too: %v", connectionSource(s), s.connection, err, lerr)
	}
	names := make([]string, 0, len(all))
	for _, c := range all {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	known := "there are none"
	if len(names) > 0 {
		known = "the known ones are " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s %q: no such Podman connection (%s; `podman system connection list` shows them, `podman system connection add NAME URL` adds one)",
		connectionSource(s), s.connection, known)
}

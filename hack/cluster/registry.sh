# Functions that run the test cluster's image registry: Debian's
# docker-registry (distribution 2.8) on localhost:$REGISTRY_PORT, with TLS
# from the cluster's CA, for the profile images `wink-mcp profiles build
# --push` sends and the node pulls. The node's containerd trusts it through
# a hosts.toml under its own configuration (config_path), never the host's
# /etc/containerd; Podman through /etc/containers/certs.d/$REGISTRY/ca.crt,
# which trusts the cluster's CA for this one registry and nothing else.
# Sourced after config.sh, daemons.sh and certs.sh.

REGISTRY_DIR=$CLUSTER_DIR/registry
CONTAINERD_CERTS_D=$CLUSTER_DIR/containerd/certs.d
PODMAN_CERTS_D=/etc/containers/certs.d/$REGISTRY

# write_registry_configs writes the registry's configuration, and the
# node's and Podman's trust in it.
write_registry_configs() {
	make_cert registry "/CN=localhost" serverAuth "DNS:localhost,IP:127.0.0.1"
	mkdir -p "$REGISTRY_DIR/storage" "$CONTAINERD_CERTS_D/$REGISTRY" "$PODMAN_CERTS_D"
	cat >"$REGISTRY_DIR/config.yml" <<-YAML
		version: 0.1
		log:
		  level: warn
		storage:
		  filesystem:
		    rootdirectory: $REGISTRY_DIR/storage
		  delete:
		    enabled: true
		http:
		  addr: 127.0.0.1:$REGISTRY_PORT
		  tls:
		    certificate: $PKI/registry.crt
		    key: $PKI/registry.key
	YAML
	cat >"$CONTAINERD_CERTS_D/$REGISTRY/hosts.toml" <<-TOML
		server = "https://$REGISTRY"
		[host."https://$REGISTRY"]
		  capabilities = ["pull", "resolve"]
		  ca = "$PKI/ca.crt"
	TOML
	cmp -s "$PKI/ca.crt" "$PODMAN_CERTS_D/ca.crt" || cp "$PKI/ca.crt" "$PODMAN_CERTS_D/ca.crt"
}

# start_registry starts the registry and waits for its API.
start_registry() {
	start_daemon docker-registry /usr/bin/docker-registry serve "$REGISTRY_DIR/config.yml"
	wait_for 30 "the registry" curl -sf --cacert "$PKI/ca.crt" "https://$REGISTRY/v2/"
}

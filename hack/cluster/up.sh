#!/usr/bin/env bash
# up.sh brings up the single-node Kubernetes test cluster (`make cluster`,
# docs/kubernetes-test-cluster.md): it installs containerd and the CNI
# plugins, builds the components once per version (build.sh), makes the
# certificates, starts etcd, the API server, the controller manager, the
# scheduler, a containerd of the node's own, the kubelet and kube-router's
# NetworkPolicy firewall as background daemons, imports the images, waits
# for the node to be Ready, and starts the local-path provisioner with its
# StorageClass (local_path.sh) and the image registry the node pulls
# profile images from (registry.sh). It is
# idempotent: with everything up it checks and returns in seconds; daemons
# that died, or a reboot, get started again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/config.sh"
. "$here/daemons.sh"
. "$here/certs.sh"
. "$here/local_path.sh"
. "$here/registry.sh"

[ "$(id -u)" -eq 0 ] || die "run as root: the node runs containers and sets up a bridge"

CONTAINERD_RUN=$CLUSTER_RUN/containerd
CONTAINERD_SOCKET=$CONTAINERD_RUN/containerd.sock
CNI_CONF_DIR=$CLUSTER_DIR/cni/net.d
# The kernel settings the kubelet changes when it starts
# (setupKernelTunables); the host's values are saved before its first start.
KUBELET_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

install_packages() {
	local missing=()
	command -v containerd >/dev/null || missing+=(containerd)
	command -v runc >/dev/null || missing+=(runc)
	# containerd runs under tini -s, which reaps the shims it orphans.
	command -v tini >/dev/null || missing+=(tini)
	[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
	command -v gcc >/dev/null || missing+=(gcc libc6-dev)
	command -v curl >/dev/null || missing+=(curl)
	# The reverse proxy of the replicas' test (TestKubernetesReplicas); the
	# package starts no daemon here (no init system), the test runs its own.
	command -v haproxy >/dev/null || missing+=(haproxy)
	# kube-router's firewall drives iptables (the nf_tables back end, as
	# Podman's netavark) and ipset.
	command -v iptables >/dev/null || missing+=(iptables)
	command -v ipset >/dev/null || missing+=(ipset)
	# The registry of the profile images (registry.sh); it too runs as our daemon.
	[ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
	[ ${#missing[@]} -eq 0 ] && return
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# setup_bridge gives the node its address on the Pods' bridge, which the CNI
# bridge plugin then uses as is.
setup_bridge() {
	ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
	[[ " $(ip -br addr show dev "$BRIDGE") " == *" $NODE_IP/${POD_CIDR#*/} "* ]] ||
		ip addr add "$NODE_IP/${POD_CIDR#*/}" dev "$BRIDGE"
	ip link set "$BRIDGE" up
}

write_configs() {
	mkdir -p "$CNI_CONF_DIR" "$CLUSTER_DIR/containerd" "$CONTAINERD_RUN"
	# No default route and no masquerade: Pods reach each other and the node,
	# nothing else. The IP reservations live under /run, so a reboot frees them.
	cat >"$CNI_CONF_DIR/10-wink.conflist" <<-JSON
		{
		  "cniVersion": "0.4.0",
		  "name": "wink-k8s",
		  "plugins": [{
		    "type": "bridge",
		    "bridge": "$BRIDGE",
		    "isGateway": false,
		    "ipMasq": false,
		    "hairpinMode": true,
		    "ipam": {
		      "type": "host-local",
		      "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
		      "dataDir": "$CLUSTER_RUN/cni-ipam"
		    }
		  }]
		}
	JSON
	# Everything of this containerd's under its own root, state and socket;
	# runc keeps its containers' state under our run folder too.
	# restrict_oom_score_adj: this VM's bounding set lacks CAP_SYS_RESOURCE,
	# so runc fails every sandbox asked to lower oom_score_adj.
	cat >"$CLUSTER_DIR/containerd/config.toml" <<-TOML
		version = 2
		root = "$CLUSTER_DIR/containerd/root"
		state = "$CONTAINERD_RUN/state"
		[grpc]
		  address = "$CONTAINERD_SOCKET"
		[ttrpc]
		  address = "$CONTAINERD_SOCKET.ttrpc"
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$CLUSTER_DIR/containerd/opt"
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "$PAUSE_IMAGE"
		  restrict_oom_score_adj = true
		  netns_mounts_under_state_dir = true
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        SystemdCgroup = false
		        Root = "$CONTAINERD_RUN/runc"
		  # The registries' hosts.toml (registry.sh): under this node's
		  # configuration, never the host's /etc/containerd.
		  [plugins."io.containerd.grpc.v1.cri".registry]
		    config_path = "$CONTAINERD_CERTS_D"
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$CNI_CONF_DIR"
	TOML
	cat >"$CLUSTER_DIR/kubelet.yaml" <<-YAML
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		address: $NODE_IP
		authentication:
		  anonymous:
		    enabled: false
		  webhook:
		    enabled: true
		  x509:
		    clientCAFile: $PKI/ca.crt
		authorization:
		  mode: Webhook
		tlsCertFile: $PKI/kubelet-server.crt
		tlsPrivateKeyFile: $PKI/kubelet-server.key
		cgroupDriver: cgroupfs
		containerRuntimeEndpoint: unix://$CONTAINERD_SOCKET
		clusterDomain: cluster.local
		# No iptables chains of the kubelet's own: they drop loopback traffic
		# the host's other services need.
		makeIPTablesUtilChains: false
		# The imported images cannot be pulled again: never collect them.
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		# The disk is the machine's, shared with Podman and the builds: at the
		# default 5% (12 GB of a 250 GB disk) the kubelet evicted the
		# imported pause image while gigabytes were still free.
		evictionHard:
		  memory.available: 100Mi
		  nodefs.available: 2Gi
		  imagefs.available: 2Gi
	YAML
}

start_etcd() {
	start_daemon etcd "$ETCD_BIN/etcd" --name "$NODE_NAME" --data-dir "$CLUSTER_DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "$NODE_NAME=http://127.0.0.1:$ETCD_PEER_PORT"
	wait_for 60 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
	start_daemon kube-apiserver "$K8S_BIN/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
		--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
		--client-ca-file "$PKI/ca.crt" \
		--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "$PKI/ca.crt" \
		--kubelet-preferred-address-types InternalIP \
		--service-account-key-file "$PKI/sa.pub" \
		--service-account-signing-key-file "$PKI/sa.key" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-cluster-ip-range "$SERVICE_CIDR" \
		--authorization-mode Node,RBAC \
		--enable-admission-plugins NodeRestriction \
		--profiling=false
	wait_for 120 kube-apiserver curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		"https://$NODE_IP:$API_PORT/readyz"
}

start_controllers() {
	local k=$CLUSTER_DIR/controller-manager.kubeconfig
	start_daemon kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig "$k" --authentication-kubeconfig "$k" --authorization-kubeconfig "$k" \
		--bind-address 127.0.0.1 --leader-elect=false \
		--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
		--use-service-account-credentials --profiling=false
	k=$CLUSTER_DIR/scheduler.kubeconfig
	start_daemon kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig "$k" --authentication-kubeconfig "$k" --authorization-kubeconfig "$k" \
		--bind-address 127.0.0.1 --leader-elect=false --profiling=false
}

start_containerd() {
	# Under tini -s, a subreaper that reaps the shims containerd orphans.
	start_daemon containerd tini -s -- containerd --config "$CLUSTER_DIR/containerd/config.toml"
	wait_for 30 containerd cctl version
}

# import_images imports the sandbox image and $CLUSTER_IMAGES into
# containerd's CRI namespace: from Podman's storage, again whenever Podman's
# copy changed (its id is kept beside the cluster's state).
import_images() {
	# Listed first, then searched: grep -q would stop reading early and,
	# under pipefail, make a present image look missing.
	local present
	present=$(cctl images ls -q)
	if ! grep -qxF "$PAUSE_IMAGE" <<<"$present"; then
		log "importing $PAUSE_IMAGE"
		pause_archive | cctl images import - >/dev/null
	fi
	local image id mark
	for image in $CLUSTER_IMAGES; do
		id=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null) ||
			die "image $image is not in Podman's storage; run \`make setup\` first"
		mark=$CLUSTER_DIR/images/$(printf '%s' "$image" | tr '/:' '__')
		if [ "$(cat "$mark" 2>/dev/null)" = "$id" ] && grep -qxF "$image" <<<"$present"; then
			continue
		fi
		log "importing $image from Podman"
		podman save "$image" 2>/dev/null | cctl images import - >/dev/null
		mkdir -p "$CLUSTER_DIR/images"
		echo "$id" >"$mark"
	done
}

# pause_archive writes to stdout a docker-archive image of the static pause
# binary alone, made by hand: no registry, and nothing put in Podman's storage.
pause_archive() {
	local dir layer_sum config config_sum
	dir=$(mktemp -d)
	mkdir "$dir/root"
	cp "$PAUSE_BIN/pause" "$dir/root/pause"
	tar -C "$dir/root" --owner 0 --group 0 --numeric-owner -cf "$dir/layer.tar" pause
	layer_sum=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
	config=$(printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$(go env GOARCH)" "$layer_sum")
	config_sum=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
	printf '%s' "$config" >"$dir/$config_sum.json"
	mkdir "$dir/$layer_sum"
	mv "$dir/layer.tar" "$dir/$layer_sum/layer.tar"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$config_sum" "$PAUSE_IMAGE" "$layer_sum" >"$dir/manifest.json"
	tar -C "$dir" -cf - manifest.json "$config_sum.json" "$layer_sum"
	rm -rf "$dir"
}

start_kubelet() {
	if [ ! -f "$HOST_SYSCTLS" ]; then
		local s
		for s in $KUBELET_SYSCTLS; do echo "$s=$(sysctl -n "$s")"; done >"$HOST_SYSCTLS.tmp"
		mv "$HOST_SYSCTLS.tmp" "$HOST_SYSCTLS"
	fi
	start_daemon kubelet "$K8S_BIN/kubelet" --config "$CLUSTER_DIR/kubelet.yaml" \
		--kubeconfig "$CLUSTER_DIR/kubelet.kubeconfig" --root-dir "$CLUSTER_DIR/kubelet" \
		--hostname-override "$NODE_NAME" --node-ip "$NODE_IP"
	wait_for 60 kubelet curl -sf http://127.0.0.1:10248/healthz
}

# start_enforcer starts kube-router's network policy controller alone (no
# routing, service proxy, BGP or CNI configuration; no health or metrics
# port), as the identity wink-kube-router, whose ClusterRole only reads
# what the controller watches. Its iptables chains act on the local Pods'
# addresses only: see docs/kubernetes-test-cluster.md.
start_enforcer() {
	if ! daemon_pid kube-router >/dev/null; then
		kctl apply -f - >/dev/null <<-YAML
			apiVersion: rbac.authorization.k8s.io/v1
			kind: ClusterRole
			metadata:
			  name: wink-kube-router
			rules:
			- apiGroups: [""]
			  resources: [namespaces, pods, services, endpoints, nodes]
			  verbs: [get, list, watch]
			- apiGroups: [networking.k8s.io]
			  resources: [networkpolicies]
			  verbs: [get, list, watch]
			- apiGroups: [discovery.k8s.io]
			  resources: [endpointslices]
			  verbs: [get, list, watch]
			---
			apiVersion: rbac.authorization.k8s.io/v1
			kind: ClusterRoleBinding
			metadata:
			  name: wink-kube-router
			roleRef:
			  apiGroup: rbac.authorization.k8s.io
			  kind: ClusterRole
			  name: wink-kube-router
			subjects:
			- apiGroup: rbac.authorization.k8s.io
			  kind: User
			  name: wink-kube-router
		YAML
	fi
	start_daemon kube-router "$KUBE_ROUTER_BIN/kube-router" --kubeconfig "$CLUSTER_DIR/kube-router.kubeconfig" \
		--hostname-override "$NODE_NAME" --service-cluster-ip-range "$SERVICE_CIDR" \
		--run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false \
		--enable-cni=false --enable-ipv6=false --health-port 0 --metrics-port 0
	wait_for 60 "kube-router's firewall" enforcer_ready
}

# enforcer_ready says whether kube-router's firewall chains are in place.
enforcer_ready() { iptables -S KUBE-ROUTER-FORWARD >/dev/null 2>&1; }

# node_ready says whether the node is Ready, as told by a kubelet that
# started at $1 or after (the status a kubelet stopped a moment ago posted
# stays Ready for 40 s).
node_ready() {
	local ready
	ready=$(kctl get node "$NODE_NAME" \
		-o 'jsonpath={range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}') || return 1
	[ "${ready%% *}" = True ] && [[ ! "${ready#* }" < "$1" ]]
}

start=$SECONDS
install_packages
"$here/build.sh"
mkdir -p "$CLUSTER_DIR" "$CLUSTER_RUN" "$CLUSTER_LOGS"
chmod 0700 "$CLUSTER_DIR"
make_pki
setup_bridge
write_configs
write_registry_configs
start_registry
start_etcd
start_apiserver
start_controllers
start_containerd
import_images
kubelet_start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start_kubelet
[[ " ${STARTED[*]} " == *" kubelet "* ]] || kubelet_start=
wait_for 120 "node $NODE_NAME Ready" node_ready "$kubelet_start"
restore_sysctls
start_enforcer
# Pods can be created once the default service account exists.
wait_for 60 "the default service account" kctl get serviceaccount default
start_local_path
log "node $NODE_NAME Ready in $((SECONDS - start)) s; kubeconfig: $CLUSTER_KUBECONFIG"

# The versions, places and addresses of the Kubernetes test cluster
# (docs/kubernetes-test-cluster.md), sourced by the other scripts here. The
# variables set with ${VAR:-default} may be overridden from the environment.

# The Kubernetes components, and the version of the published staging
# modules (k8s.io/api, k8s.io/client-go...) that go with them.
K8S_VERSION=${K8S_VERSION:-v1.34.4}
K8S_STAGING_VERSION=${K8S_STAGING_VERSION:-v0.${K8S_VERSION#v1.}}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
# Rancher's local-path-provisioner: PersistentVolumes as folders of the
# node's disk, for the claims of the Kubernetes engine's workspaces.
LOCAL_PATH_VERSION=${LOCAL_PATH_VERSION:-v0.0.30}
# The NetworkPolicy enforcer: kube-router's firewall controller alone
# (iptables and ipset), the newest release the module proxy serves.
KUBE_ROUTER_VERSION=${KUBE_ROUTER_VERSION:-v2.1.0}

# Built binaries, one folder per version, outside the repository: a second
# run, or another worktree, reuses them.
CLUSTER_CACHE=${CLUSTER_CACHE:-/var/cache/wink-mcp}
K8S_BIN=$CLUSTER_CACHE/k8s/$K8S_VERSION/bin
ETCD_BIN=$CLUSTER_CACHE/etcd/$ETCD_VERSION/bin
PAUSE_BIN=$CLUSTER_CACHE/pause/$K8S_VERSION/bin
LOCAL_PATH_BIN=$CLUSTER_CACHE/local-path-provisioner/$LOCAL_PATH_VERSION/bin
KUBE_ROUTER_BIN=$CLUSTER_CACHE/kube-router/$KUBE_ROUTER_VERSION/bin
# The Go build cache of the builds, removed once all are built.
CLUSTER_GOCACHE=${CLUSTER_GOCACHE:-$CLUSTER_CACHE/go-build}

# The node's state: certificates, configuration, etcd's data, containerd's
# root. CLUSTER_KUBECONFIG is what the integration tests read.
CLUSTER_DIR=${CLUSTER_DIR:-/var/lib/wink-mcp/cluster}
CLUSTER_KUBECONFIG=$CLUSTER_DIR/admin.kubeconfig
# The host's values of the kernel settings the kubelet changes.
HOST_SYSCTLS=$CLUSTER_DIR/host-sysctls
CLUSTER_RUN=${CLUSTER_RUN:-/run/wink-mcp/cluster}
CLUSTER_LOGS=${CLUSTER_LOGS:-/var/log/wink-mcp/cluster}
# The provisioner's configuration, and the folders its volumes are; its
# StorageClass, the cluster's default, and the namespace of its helper Pods.
LOCAL_PATH_DIR=$CLUSTER_DIR/local-path
LOCAL_PATH_VOLUMES=$LOCAL_PATH_DIR/volumes
STORAGE_CLASS=wink-local
LOCAL_PATH_NAMESPACE=wink-local-path

# The node and its networks. The node's address sits on the Pods' bridge
# (this kernel has no dummy device); Pods get no default route and no
# masquerade, so nothing they send leaves the machine. Services have
# addresses (the API server needs a range) but no kube-proxy routes them.
NODE_NAME=wink-node
NODE_IP=10.232.0.1
POD_CIDR=10.232.0.0/24
SERVICE_CIDR=10.233.0.0/24
SERVICE_IP=10.233.0.1
BRIDGE=wink-k8s0
API_PORT=6443
ETCD_PORT=2379
ETCD_PEER_PORT=2380

# The Pod sandbox image, made from the static pause binary, and the images
# imported from Podman's storage (built by `make setup`).
PAUSE_IMAGE=localhost/wink-pause:$K8S_VERSION
CLUSTER_IMAGES=${CLUSTER_IMAGES:-localhost/wink-workspace:bookworm}

# The registry the profile images are pushed to and the node pulls from
# (registry.sh): localhost only, TLS from the cluster's CA.
REGISTRY_PORT=${REGISTRY_PORT:-5000}
REGISTRY=localhost:$REGISTRY_PORT

#!/usr/bin/env bash
# down.sh stops the Kubernetes test cluster (`make cluster-down`): its Pods,
# then its daemons, removes kube-router's iptables chains and ipsets, and
# puts back the kernel settings the kubelet changed.
# The binaries, certificates and etcd's data stay, so `make cluster` brings
# the same cluster back in seconds; rm -rf $CLUSTER_DIR forgets it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/config.sh"
. "$here/daemons.sh"

[ "$(id -u)" -eq 0 ] || die "run as root"

# Without the provisioner, the scheduler and the controllers nothing
# replaces the Pods deleted next; the kubelet tears each down (its network
# included).
stop_daemon local-path-provisioner
stop_daemon kube-scheduler
stop_daemon kube-controller-manager
if daemon_pid kubelet >/dev/null && daemon_pid kube-apiserver >/dev/null; then
	log "deleting every Pod"
	kctl delete pods --all --all-namespaces --wait --timeout 60s >/dev/null ||
		log "some Pods were not deleted within 60 s; their containers are killed below"
fi
stop_daemon kubelet
# What is left (the kubelet was not running, or a Pod did not go) is killed:
# containerd's shims would otherwise keep the containers running.
if daemon_pid containerd >/dev/null; then
	for task in $(cctl tasks ls -q 2>/dev/null); do
		cctl tasks kill -a -s SIGKILL "$task" >/dev/null 2>&1 || true
	done
	for task in $(cctl tasks ls -q 2>/dev/null); do
		cctl tasks delete -f "$task" >/dev/null 2>&1 || true
	done
fi
stop_daemon containerd
# The kubelet bind-mounts its root folder onto itself, and Pods' volumes
# below it; without them $CLUSTER_DIR can be removed.
findmnt -rn -o TARGET | awk -v dir="$CLUSTER_DIR/" 'index($0, dir) == 1' | sort -r | while read -r mount; do
	umount "$mount"
done
stop_daemon docker-registry
stop_daemon kube-router
remove_enforcer_rules
stop_daemon kube-apiserver
stop_daemon etcd
restore_sysctls
log "stopped; binaries in $CLUSTER_CACHE, state in $CLUSTER_DIR"

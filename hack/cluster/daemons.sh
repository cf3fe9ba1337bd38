# Functions the cluster scripts share to run the node's daemons without
# systemd: each runs in a session of its own, its pid in $CLUSTER_RUN/NAME.pid
# and its output in $CLUSTER_LOGS/NAME.log. Sourced after config.sh.

log() { printf '%s cluster: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

# daemon_pid prints the pid of daemon $1 when it runs, and fails otherwise:
# a pid file left by a daemon that died (or by a boot before) does not count.
daemon_pid() {
	local pid
	pid=$(cat "$CLUSTER_RUN/$1.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	[[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" == *"$1"* ]] || return 1
	echo "$pid"
}

# start_daemon starts daemon $1 with the command that follows, unless it
# runs already with the same command and the same contents of the files the
# command names: a changed version, flag or configuration restarts it.
# From /, so that it keeps no one's checkout busy. The names of the daemons
# it started are in STARTED.
STARTED=()
start_daemon() {
	local name=$1
	shift
	local fingerprint
	fingerprint=$(daemon_fingerprint "$@")
	if daemon_pid "$name" >/dev/null; then
		if [ "$(cat "$CLUSTER_RUN/$name.fingerprint" 2>/dev/null)" = "$fingerprint" ]; then
			log "$name runs"
			return
		fi
		log "$name runs with another command or configuration: restarting it"
		stop_daemon "$name"
	fi
	log "starting $name (log: $CLUSTER_LOGS/$name.log)"
	mkdir -p "$CLUSTER_RUN" "$CLUSTER_LOGS"
	(cd / && exec setsid "$@") >>"$CLUSTER_LOGS/$name.log" 2>&1 </dev/null &
	local pid=$!
	# Under tini, the pid kept is the daemon's: stopping it stops tini, and
	# a daemon whose tini was killed still counts as running.
	if [ "$1" = tini ]; then
		local child=
		for _ in $(seq 50); do
			child=$(pgrep -P "$pid") && break
			sleep 0.1
		done
		[ -n "$child" ] || die "$name did not start under tini; see $CLUSTER_LOGS/$name.log"
		pid=$child
	fi
	echo "$pid" >"$CLUSTER_RUN/$name.pid"
	STARTED+=("$name")
	printf '%s\n' "$fingerprint" >"$CLUSTER_RUN/$name.fingerprint"
}

# daemon_fingerprint prints a digest of a command and of the files under
# $CLUSTER_DIR it names (configuration, certificates); a binary's path
# already carries its version.
daemon_fingerprint() {
	local arg
	{
		printf '%s\n' "$@"
		for arg in "$@"; do
			case $arg in "$CLUSTER_DIR"/*) if [ -f "$arg" ]; then sha256sum "$arg"; fi ;; esac
		done
	} | sha256sum | cut -d' ' -f1
}

# stop_daemon stops daemon $1: SIGTERM, then SIGKILL after 20 s.
stop_daemon() {
	local pid
	if ! pid=$(daemon_pid "$1"); then
		rm -f "$CLUSTER_RUN/$1.pid" "$CLUSTER_RUN/$1.fingerprint"
		return
	fi
	log "stopping $1"
	kill "$pid"
	for _ in $(seq 200); do
		[ -d "/proc/$pid" ] || break
		sleep 0.1
	done
	[ -d "/proc/$pid" ] && kill -9 "$pid"
	rm -f "$CLUSTER_RUN/$1.pid" "$CLUSTER_RUN/$1.fingerprint"
}

# wait_for waits up to $1 seconds for the command that follows to succeed,
# and fails with $2 as the reason otherwise.
wait_for() {
	local seconds=$1 what=$2
	shift 2
	local deadline=$((SECONDS + seconds))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || die "$what did not come up within $seconds s"
		sleep 0.2
	done
}

# restore_sysctls puts back the kernel settings the kubelet changed when it
# started, so that the host and Podman are left as they were.
restore_sysctls() {
	[ -f "$HOST_SYSCTLS" ] || return 0
	local line
	while read -r line; do
		[ "$(sysctl -n "${line%%=*}")" = "${line#*=}" ] || sysctl -q -w "$line"
	done <"$HOST_SYSCTLS"
}

# remove_enforcer_rules removes what kube-router's firewall added to the
# host: the jumps to its chains (commented "kube-router netpol"), its chains
# (KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-*) and its ipsets (KUBE-SRC-*,
# KUBE-DST-*). Nothing else of the filter table is touched.
remove_enforcer_rules() {
	command -v iptables >/dev/null || return 0
	local chain rule
	for chain in INPUT FORWARD OUTPUT; do
		iptables -S "$chain" | { grep -F -- '--comment "kube-router netpol' || true; } | while read -r rule; do
			eval "iptables -D ${rule#-A }"
		done
	done
	local chains
	chains=$(iptables -S | sed -n 's/^-N \(KUBE-ROUTER-[A-Z]*\|KUBE-POD-FW-[A-Z0-9]*\|KUBE-NWPLCY-[A-Z0-9]*\)$/\1/p')
	for chain in $chains; do iptables -F "$chain"; done
	for chain in $chains; do iptables -X "$chain"; done
	command -v ipset >/dev/null || return 0
	local set
	for set in $(ipset list -n | grep -E '^(KUBE-SRC-|KUBE-DST-)'); do ipset destroy "$set"; done
}

# kctl runs the cached kubectl as the cluster's administrator.
kctl() { "$K8S_BIN/kubectl" --kubeconfig "$CLUSTER_KUBECONFIG" "$@"; }

# cctl runs ctr against the node's own containerd, in the CRI's namespace.
cctl() { ctr --address "$CLUSTER_RUN/containerd/containerd.sock" --namespace k8s.io "$@"; }

#!/usr/bin/env bash
# setup.sh makes a Debian/Ubuntu host ready to run and test wink-mcp.
# It is idempotent: every step checks before it acts, so a second run takes seconds.
#   - installs podman, runc and (without systemd) tini when missing;
#   - writes a containers.conf drop-in for hosts where Podman's defaults fail
#     (crun on hybrid cgroups, ulimits above the host's hard limit);
#   - starts the Podman REST service when its socket does not answer;
#   - builds the local workspace images offline when they are missing;
#   - installs the TypeScript MCP SDK the integration tests drive the server with;
#   - builds Ory Hydra, the authorization server of the OAuth tests, once per
#     version (hack/hydra/build.sh);
#   - makes a plain user with rootless Podman (its own service and images) for
#     the rootless integration tests;
#   - makes a second Podman host for the remote tests: a Podman service with
#     its own storage, in its own network and mount namespaces (it does not
#     see this machine's files), reached only over ssh with a key.
# Environment: WINK_IMAGE (default localhost/wink-workspace:bookworm),
# WINK_TEST_IMAGE (default localhost/wink-busybox:latest), PODMAN_SOCKET
# (default /run/podman/podman.sock), DEBIAN_MIRROR (default: the first apt source),
# WINK_ROOTLESS_USER (default wink-rootless).
set -euo pipefail

IMAGE=${WINK_IMAGE:-localhost/wink-workspace:bookworm}
TEST_IMAGE=${WINK_TEST_IMAGE:-localhost/wink-busybox:latest}
SOCKET=${PODMAN_SOCKET:-/run/podman/podman.sock}
DROPIN_DIR=/etc/containers/containers.conf.d
DROPIN=$DROPIN_DIR/50-wink-mcp.conf
SERVICE_LOG=/var/log/wink-podman-service.log
ROOTLESS_USER=${WINK_ROOTLESS_USER:-wink-rootless}
# The subordinate ids of the rootless user when useradd gave it none
# (Debian's useradd hands out 100000:65536 and up by itself).
ROOTLESS_SUBIDS=300000-365535
# Bumped when the way the images are built changes, so that `make setup`
# rebuilds images an older setup made. 2: / is mode 0755 (mktemp made it
# 0700, which vfs storage keeps, and then uid 65534 cannot reach the agent).
# 3: the workspace image carries the tools agents reach for first (git,
# make, curl, a C toolchain, python3 with venv and pip).
IMAGE_FORMAT=3
# What the workspace image holds beyond Debian's minbase.
WORKSPACE_PACKAGES=python3,python3-venv,python3-pip,ripgrep,git,make,curl,ca-certificates,build-essential,unzip,xz-utils,procps,less
# The remote Podman host: a network namespace with sshd and a Podman
# service whose socket only it sees.
REMOTE_NS=wink-remote
REMOTE_ADDR=10.231.0.2
REMOTE_GW=10.231.0.1
REMOTE_DIR=/var/lib/wink-remote
REMOTE_RUN=/run/wink-remote
REMOTE_KEY=$REMOTE_DIR/id_ed25519
REMOTE_URL=ssh://root@$REMOTE_ADDR:22$REMOTE_RUN/podman.sock

REPO=$(cd "$(dirname "$0")/.." && pwd)
TSCLIENT=$REPO/integration/tsclient

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "run as root or install sudo"
	SUDO=sudo
fi

apt_install() {
	log "installing $*"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

install_packages() {
	local missing=()
	command -v podman >/dev/null || missing+=(podman)
	command -v runc >/dev/null || missing+=(runc)
	command -v curl >/dev/null || missing+=(curl)
	# Each session's disk limit is an ext4 image, made and loop-mounted by these.
	PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
	PATH="$PATH:/usr/sbin:/sbin" command -v losetup >/dev/null || missing+=(mount)
	# Rootless Podman maps subordinate ids with these.
	command -v newuidmap >/dev/null || missing+=(uidmap)
	# Without systemd the service runs under tini, which reaps the conmon processes
	# the service orphans (see start_service).
	if ! service_via_systemd; then command -v tini >/dev/null || missing+=(tini); fi
	if [ ${#missing[@]} -gt 0 ]; then
		apt_install "${missing[@]}"
	else
		log "podman $(podman version --format '{{.Client.Version}}') and runc already installed"
	fi
}

# write_dropin configures only what this host needs, in a drop-in of its own,
# so a user's containers.conf and their own drop-ins stay as they are.
write_dropin() {
	local engine="" containers="" hard
	# crun cannot run containers when cgroups are in hybrid (v1 + unified) mode.
	if [ "$(stat -fc %T /sys/fs/cgroup)" != "cgroup2fs" ]; then
		command -v runc >/dev/null || die "this host has v1/hybrid cgroups and needs runc"
		engine='runtime = "runc"'
	fi
	# As root, Podman asks for RLIMIT_NOFILE=1048576 and RLIMIT_NPROC=4194304 by default;
	# a lower hard limit on the host makes every container start fail.
	local ulimits=() nofile nproc
	nofile=$(ulimit -Hn)
	nproc=$(ulimit -Hu)
	if [ "$nofile" != unlimited ] && [ "$nofile" -lt 1048576 ]; then
		ulimits+=("\"nofile=$nofile:$nofile\"")
	fi
	# The ceiling runc may set for NPROC can be below `ulimit -Hu` (32768 where 96365 was
	# reported), so use a value known to work rather than the reported limit.
	if [ "$nproc" != unlimited ] && [ "$nproc" -lt 4194304 ]; then
		ulimits+=("\"nproc=4096:4096\"")
	fi
	if [ ${#ulimits[@]} -gt 0 ]; then
		containers="default_ulimits = [$(IFS=,; echo "${ulimits[*]}")]"
	fi
	local want=""
	[ -n "$engine" ] && want+=$'[engine]\n'"$engine"$'\n'
	[ -n "$containers" ] && want+=$'[containers]\n'"$containers"$'\n'
	if [ -z "$want" ]; then
		log "podman defaults work on this host; no drop-in needed"
		return
	fi
	want="# Written by wink-mcp's scripts/setup.sh for this host's quirks; safe to delete."$'\n'"$want"
	if [ -f "$DROPIN" ] && [ "$(cat "$DROPIN")"$'\n' = "$want" ]; then
		log "drop-in $DROPIN is up to date"
		return
	fi
	log "writing $DROPIN"
	$SUDO mkdir -p "$DROPIN_DIR"
	printf '%s' "$want" | $SUDO tee "$DROPIN" >/dev/null
}

# service_via_systemd says whether systemd's podman.socket serves $SOCKET.
service_via_systemd() {
	[ "$(ps -p 1 -o comm=)" = systemd ] && [ "$SOCKET" = /run/podman/podman.sock ]
}

# service_answers says whether a Podman service answers on socket $1 (default $SOCKET).
service_answers() {
	curl -sf --max-time 2 --unix-socket "${1:-$SOCKET}" http://d/_ping >/dev/null 2>&1
}

# wait_for_service waits up to 10 s for the service on socket $1 to answer.
wait_for_service() {
	for _ in $(seq 1 100); do
		service_answers "$1" && return
		sleep 0.1
	done
	return 1
}

start_service() {
	if service_answers; then
		log "podman service answers on $SOCKET"
		return
	fi
	if service_via_systemd; then
		log "enabling podman.socket with systemd"
		$SUDO systemctl enable --now podman.socket
	else
		log "starting podman system service on $SOCKET (log: $SERVICE_LOG)"
		$SUDO mkdir -p "$(dirname "$SOCKET")"
		$SUDO rm -f "$SOCKET"
		# Each container's conmon daemonises, so when it exits it is reaped by the
		# nearest child subreaper above the service, else by PID 1. A subreaper that
		# reaps only its own child (as some CI runners are) would collect them as
		# zombies, hundreds in a test run; tini -s is a subreaper that reaps all.
		# From /: conmon writes an exited container's "oom" marker into the
		# service's working directory, which must not be someone's checkout.
		# The subshell holds no one's pipe open: its own streams are redirected.
		(cd / && exec $SUDO setsid nohup tini -s -- podman system service --time=0 "unix://$SOCKET") >>"$SERVICE_LOG" 2>&1 </dev/null &
	fi
	wait_for_service "$SOCKET" && { log "podman service is up"; return; }
	die "podman service did not answer on $SOCKET within 10 s; see $SERVICE_LOG"
}

debian_mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
	local m
	m=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		awk '{print $2}' | grep -v security | head -n1 || true)
	echo "${m:-http://deb.debian.org/debian}"
}

# image_current says whether image $1 exists and was built by this
# IMAGE_FORMAT, asking the podman command that follows it (default: root's).
image_current() {
	local image=$1
	shift
	[ $# -gt 0 ] || set -- $SUDO podman
	[ "$("$@" image inspect --format '{{index .Labels "io.wink-mcp.image-format"}}' "$image" 2>/dev/null)" = "$IMAGE_FORMAT" ]
}

# import_rootfs imports the directory $1 as image $2 with CMD $3, with / readable
# by any user under any storage driver (its mode is the directory's).
import_rootfs() {
	$SUDO chmod 0755 "$1"
	$SUDO tar -C "$1" -c . | $SUDO podman import -q --change "CMD [\"$3\"]" --change "LABEL io.wink-mcp.image-format=$IMAGE_FORMAT" "${@:4}" - "$2" >/dev/null
}

# build_workspace_image builds Debian bookworm minbase with WORKSPACE_PACKAGES,
# offline from any registry: only the Debian archive is needed. Its apt
# sources name the mirror it was built from, so profiles' setup commands can
# apt-get install more (see docs/toolchains.md).
build_workspace_image() {
	if image_current "$IMAGE"; then
		log "image $IMAGE present"
		return
	fi
	command -v debootstrap >/dev/null || apt_install debootstrap
	local root
	root=$(mktemp -d /var/tmp/wink-rootfs.XXXXXX)
	log "building $IMAGE with debootstrap (about two minutes)"
	local start=$SECONDS
	$SUDO debootstrap --variant=minbase --include="$WORKSPACE_PACKAGES" bookworm "$root" "$(debian_mirror)" >/dev/null
	$SUDO rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	import_rootfs "$root" "$IMAGE" /bin/bash
	$SUDO rm -rf "$root"
	log "image $IMAGE built in $((SECONDS - start)) s, $($SUDO podman image inspect --format '{{.Size}}' "$IMAGE") bytes"
}

# build_test_image builds a 2 MB busybox image for fast tests.
build_test_image() {
	if image_current "$TEST_IMAGE"; then
		log "image $TEST_IMAGE present"
		return
	fi
	[ -x /bin/busybox ] || apt_install busybox-static
	local root
	root=$(mktemp -d /var/tmp/wink-busybox.XXXXXX)
	mkdir -p "$root/bin" "$root/tmp" "$root/etc"
	cp /bin/busybox "$root/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	import_rootfs "$root" "$TEST_IMAGE" /bin/sh --change 'ENV PATH=/bin'
	rm -rf "$root"
	log "image $TEST_IMAGE built"
}

# install_test_clients installs the TypeScript SDK from the npm registry,
# unless node_modules already matches package-lock.json.
install_test_clients() {
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		apt_install nodejs npm
	fi
	if cmp -s "$TSCLIENT/package-lock.json" "$TSCLIENT/node_modules/.wink-installed-lock" 2>/dev/null; then
		log "TypeScript SDK client present"
		return
	fi
	log "installing the TypeScript SDK client (npm ci)"
	(cd "$TSCLIENT" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	cp "$TSCLIENT/package-lock.json" "$TSCLIENT/node_modules/.wink-installed-lock"
}

# install_ssh_tools installs what TestSSHAgentGitClone runs on this machine:
# sshd (as the rootless user, on a loopback port), ssh-agent and ssh-add.
install_ssh_tools() {
	local missing=()
	command -v ssh-agent >/dev/null || missing+=(openssh-client)
	[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
	[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

# as_rootless runs a command as the rootless test user, in its own login-like
# environment (no systemd user session is needed).
as_rootless() {
	local uid
	uid=$(id -u "$ROOTLESS_USER")
	(cd / && $SUDO setpriv --reuid "$ROOTLESS_USER" --regid "$ROOTLESS_USER" --init-groups \
		env -i HOME="$(getent passwd "$ROOTLESS_USER" | cut -d: -f6)" USER="$ROOTLESS_USER" \
		XDG_RUNTIME_DIR="/run/user/$uid" PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin "$@")
}

# setup_rootless makes the rootless test user: subordinate ids, a runtime
# directory, a Podman service on /run/user/UID/podman/podman.sock (what a
# desktop user's podman.socket serves) and the two images in its storage.
setup_rootless() {
	if ! id "$ROOTLESS_USER" >/dev/null 2>&1; then
		log "creating user $ROOTLESS_USER for the rootless tests"
		$SUDO useradd -m -s /bin/bash "$ROOTLESS_USER"
	fi
	grep -q "^$ROOTLESS_USER:" /etc/subuid 2>/dev/null || $SUDO usermod --add-subuids "$ROOTLESS_SUBIDS" "$ROOTLESS_USER"
	grep -q "^$ROOTLESS_USER:" /etc/subgid 2>/dev/null || $SUDO usermod --add-subgids "$ROOTLESS_SUBIDS" "$ROOTLESS_USER"
	local uid run socket
	uid=$(id -u "$ROOTLESS_USER")
	run=/run/user/$uid
	socket=$run/podman/podman.sock
	$SUDO install -d -m 0700 -o "$ROOTLESS_USER" -g "$ROOTLESS_USER" "$run"
	as_rootless mkdir -p "$run/podman"
	if service_answers "$socket"; then
		log "rootless podman service answers on $socket"
	else
		log "starting $ROOTLESS_USER's rootless podman service on $socket (log: $SERVICE_LOG.$ROOTLESS_USER)"
		# Under tini when there is one, for the reason start_service gives.
		local reaper=()
		command -v tini >/dev/null && reaper=(tini -s --)
		(as_rootless setsid nohup "${reaper[@]}" podman system service --time=0 "unix://$socket") >>"$SERVICE_LOG.$ROOTLESS_USER" 2>&1 </dev/null &
		wait_for_service "$socket" ||
			die "rootless podman service did not answer on $socket within 10 s; see $SERVICE_LOG.$ROOTLESS_USER"
	fi
	local image
	for image in "$TEST_IMAGE" "$IMAGE"; do
		if image_current "$image" as_rootless podman; then
			log "image $image present for $ROOTLESS_USER"
			continue
		fi
		log "copying $image into $ROOTLESS_USER's storage"
		$SUDO podman save "$image" 2>/dev/null | as_rootless podman load -q >/dev/null
	done
}

# remote_podman runs the podman CLI against the remote host's service.
remote_podman() { $SUDO podman --url "$REMOTE_URL" --identity "$REMOTE_KEY" "$@"; }

# remote_answers says whether the remote host's service answers over ssh.
remote_answers() { remote_podman version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# setup_remote_host makes the second Podman host the remote tests reach
# with --podman-url ssh://... --podman-identity: sshd and a Podman service
# with their own storage in a network namespace of their own, and a mount
# namespace where this machine's working and temporary directories, caches
# and Podman state are empty: a server that bind-mounted its own files there
# would find nothing.
setup_remote_host() {
	local missing=()
	command -v ip >/dev/null || missing+=(iproute2)
	command -v ssh >/dev/null || missing+=(openssh-client)
	[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
	[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
	$SUDO install -d -m 0700 "$REMOTE_DIR"
	[ -f "$REMOTE_KEY" ] || $SUDO ssh-keygen -q -t ed25519 -N '' -C wink-remote-client -f "$REMOTE_KEY"
	[ -f "$REMOTE_DIR/host_key" ] || $SUDO ssh-keygen -q -t ed25519 -N '' -C wink-remote-host -f "$REMOTE_DIR/host_key"
	$SUDO cp "$REMOTE_KEY.pub" "$REMOTE_DIR/authorized_keys"
	$SUDO tee "$REMOTE_DIR/sshd_config" >/dev/null <<-EOF
		ListenAddress $REMOTE_ADDR
		HostKey $REMOTE_DIR/host_key
		AuthorizedKeysFile $REMOTE_DIR/authorized_keys
		PermitRootLogin prohibit-password
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UsePAM no
		StrictModes no
		AllowStreamLocalForwarding yes
		PidFile $REMOTE_RUN/sshd.pid
	EOF
	# The host's key, so that ssh and Podman's ssh client trust it.
	local known=$HOME/.ssh/known_hosts entry
	entry="$REMOTE_ADDR $(cut -d' ' -f1,2 "$REMOTE_DIR/host_key.pub")"
	mkdir -p "$HOME/.ssh"
	grep -qxF "$entry" "$known" 2>/dev/null || {
		[ -f "$known" ] && sed -i "/^$REMOTE_ADDR /d" "$known"
		echo "$entry" >>"$known"
	}
	if remote_answers; then
		log "remote podman host answers at $REMOTE_URL"
	else
		log "starting the remote podman host at $REMOTE_URL (log: $SERVICE_LOG.remote)"
		ip netns list | grep -qw "$REMOTE_NS" || $SUDO ip netns add "$REMOTE_NS"
		if ! ip link show wink-remote0 >/dev/null 2>&1; then
			$SUDO ip link add wink-remote0 type veth peer name eth0 netns "$REMOTE_NS"
			$SUDO ip addr add "$REMOTE_GW/24" dev wink-remote0
			$SUDO ip link set wink-remote0 up
			$SUDO ip netns exec "$REMOTE_NS" ip addr add "$REMOTE_ADDR/24" dev eth0
			$SUDO ip netns exec "$REMOTE_NS" ip link set eth0 up
			$SUDO ip netns exec "$REMOTE_NS" ip link set lo up
		fi
		$SUDO mkdir -p "$REMOTE_RUN"
		$SUDO tee "$REMOTE_DIR/run.sh" >/dev/null <<-EOF
			#!/bin/sh
			# Runs in the remote host's own network and mount namespaces.
			set -e
			mount -t tmpfs -o mode=0755 tmpfs $REMOTE_RUN
			for d in /tmp /var/tmp /root /home /work /var/cache /var/lib/containers /run/podman /run/containers /run/libpod /run/user; do
				if [ -d "\$d" ]; then mount -t tmpfs tmpfs "\$d"; fi
			done
			chmod 1777 /tmp /var/tmp
			mkdir -p /run/sshd
			/usr/sbin/sshd -f $REMOTE_DIR/sshd_config -E $SERVICE_LOG.remote-sshd
			cd /
			exec tini -s -- podman --root $REMOTE_DIR/storage --runroot $REMOTE_RUN/storage --tmpdir $REMOTE_RUN/libpod \
				system service --time=0 unix://$REMOTE_RUN/podman.sock
		EOF
		$SUDO chmod 0755 "$REMOTE_DIR/run.sh"
		# nsenter, not `ip netns exec`, which mounts a new /sys and so hides
		# the cgroup hierarchies: Podman would then drop every limit.
		(exec $SUDO setsid nohup nsenter --net="/run/netns/$REMOTE_NS" unshare --mount --propagation private "$REMOTE_DIR/run.sh") \
			>>"$SERVICE_LOG.remote" 2>&1 </dev/null &
		local i
		for i in $(seq 40); do remote_answers && break; sleep 0.5; done
		remote_answers || die "the remote podman host did not answer at $REMOTE_URL within 20 s; see $SERVICE_LOG.remote"
	fi
	local image
	for image in "$TEST_IMAGE" "$IMAGE"; do
		if image_current "$image" remote_podman; then
			log "image $image present on the remote host"
			continue
		fi
		log "copying $image to the remote host"
		$SUDO podman save "$image" 2>/dev/null | remote_podman load -q >/dev/null
	done
}

# write_test_cdi_spec writes a CDI spec of a harmless device for the
# --cdi-device tests (there is no GPU here): wink-mcp.example/test=null0
# is /dev/null as /dev/wink-test0, with a variable and a read-only mount.
# Podman 4.3 reads specs only from /etc/cdi and /var/run/cdi.
write_test_cdi_spec() {
	local spec=/etc/cdi/wink-mcp-test.yaml data=/var/lib/wink-mcp/cdi-test
	$SUDO mkdir -p /etc/cdi "$data"
	printf 'given by the wink-mcp test CDI spec\n' | $SUDO tee "$data/README" >/dev/null
	$SUDO tee "$spec.tmp" >/dev/null <<-EOF
		cdiVersion: "0.5.0"
		kind: "wink-mcp.example/test"
		devices:
		  - name: null0
		    containerEdits:
		      deviceNodes:
		        - path: /dev/wink-test0
		          hostPath: /dev/null
		      env:
		        - WINK_CDI_TEST=null0
		      mounts:
		        - hostPath: $data
		          containerPath: /opt/wink-cdi
		          options: [ro, bind]
	EOF
	$SUDO mv "$spec.tmp" "$spec"
	log "CDI spec $spec written (a test device, wink-mcp.example/test=null0)"
}

install_packages
write_dropin
start_service
write_test_cdi_spec
build_test_image
build_workspace_image
setup_rootless
setup_remote_host
install_ssh_tools
install_test_clients
"$REPO/hack/hydra/build.sh"
log "ready"

#!/bin/bash
# make rootless-v2: verifies rootless Podman on cgroups v2 for real. It
# builds a Debian 12 VM (debootstrap, from the Debian mirror this machine's
# apt uses), boots it under QEMU's software emulation with the unified
# cgroup hierarchy, and runs TestRootlessV2EnforcesEveryLimit there as root
# against the rootless Podman of a plain user whose memory, CPU and pids
# controllers systemd delegates. The test drives every file tool, inspects
# the container, reads its cgroup limits, and sets off a memory bomb and a
# fork bomb. Needs root; the first run downloads about 250 MB.
#
# Not part of `make test`: this machine's cgroups are hybrid and must stay
# so, and an emulated boot and test take 10-30 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

WORK=${WINK_VM_DIR:-/var/tmp/wink-rootless-v2}
ROOTFS=$WORK/rootfs
DISK=$WORK/disk.img
SUITE=bookworm
VM_USER=wink-rootless
TAGS=$(sed -n 's/^TAGS := //p' Makefile)
# Emulated, so generous; the test's own deadline is inside this one.
VM_TIMEOUT=${WINK_VM_TIMEOUT:-50m}

say() { echo "rootless-v2: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it builds a root file system and loop-mounts its disk)"

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
	say "installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

# The mirror is this machine's, read from its apt configuration.
mirror() {
	local uri
	uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
	[ -n "$uri" ] || die "no Debian mirror in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
	echo "$uri"
}

build_rootfs() {
	say "debootstrap $SUITE into $ROOTFS (a few minutes)"
	rm -rf "$ROOTFS"
	mkdir -p "$WORK"
	# debootstrap does not choose among virtual packages: netavark provides
	# the container-network-stack that Podman depends on.
	debootstrap --include=linux-image-amd64,systemd-sysv,dbus,dbus-user-session,libpam-systemd,podman,netavark,crun,uidmap,fuse-overlayfs,slirp4netns,procps,e2fsprogs \
		"$SUITE" "$ROOTFS" "$(mirror)" >"$WORK/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $WORK/debootstrap.log"
	chroot "$ROOTFS" useradd -m -s /bin/bash "$VM_USER"
	grep -q "^$VM_USER:" "$ROOTFS/etc/subuid" || echo "$VM_USER:100000:65536" >>"$ROOTFS/etc/subuid"
	grep -q "^$VM_USER:" "$ROOTFS/etc/subgid" || echo "$VM_USER:100000:65536" >>"$ROOTFS/etc/subgid"
	# Lingering starts the user's systemd, with its delegated cgroup, at boot;
	# the user's Podman service is socket-activated, as on a desktop.
	mkdir -p "$ROOTFS/var/lib/systemd/linger"
	touch "$ROOTFS/var/lib/systemd/linger/$VM_USER"
	chroot "$ROOTFS" systemctl --global enable podman.socket >/dev/null 2>&1
	echo "/dev/vda / ext4 rw 0 1" >"$ROOTFS/etc/fstab"
	echo wink-v2 >"$ROOTFS/etc/hostname"
	cat >"$ROOTFS/etc/systemd/system/wink-verify.service" <<-'EOF'
		[Unit]
		Description=wink-mcp rootless cgroups v2 verification
		Wants=multi-user.target
		After=multi-user.target

		[Service]
		Type=oneshot
		ExecStart=/opt/wink/verify.sh
		StandardOutput=tty
		StandardError=tty
		TTYPath=/dev/ttyS0

		[Install]
		WantedBy=multi-user.target
	EOF
	chroot "$ROOTFS" systemctl enable wink-verify.service >/dev/null 2>&1
	touch "$ROOTFS/.wink-complete"
}

[ -f "$ROOTFS/.wink-complete" ] || build_rootfs

say "building the server and the integration tests"
mkdir -p "$ROOTFS/opt/wink"
CGO_ENABLED=0 go build -tags "$TAGS" -trimpath -o "$ROOTFS/opt/wink/wink-mcp" ./cmd/wink-mcp
CGO_ENABLED=0 go test -tags "$TAGS" -c -o "$ROOTFS/opt/wink/integration.test" ./integration
images=(localhost/wink-busybox:latest localhost/wink-workspace:bookworm)
for img in "${images[@]}"; do
	podman image exists "$img" || die "$img is missing here; run make setup first"
done
rm -f "$ROOTFS/opt/wink/images.tar" "$ROOTFS/opt/wink/result.log"
podman save -q -m -o "$ROOTFS/opt/wink/images.tar" "${images[@]}"
cat >"$ROOTFS/opt/wink/verify.sh" <<EOF
#!/bin/bash
# Runs at boot in the VM: the test, then power off.
exec > >(tee /opt/wink/result.log) 2>&1
uid=\$(id -u $VM_USER)
socket=/run/user/\$uid/podman/podman.sock
as_user() { runuser -u $VM_USER -- env XDG_RUNTIME_DIR=/run/user/\$uid HOME=/home/$VM_USER "\$@"; }
echo "== kernel \$(uname -r), cgroup \$(stat -fc %T /sys/fs/cgroup), delegated to $VM_USER: \$(cat /sys/fs/cgroup/user.slice/user-\$uid.slice/user@\$uid.service/cgroup.controllers 2>&1)"
for i in \$(seq 120); do [ -S "\$socket" ] && break; sleep 1; done
as_user podman load -q -i /opt/wink/images.tar
as_user podman info --format 'podman {{.Version.Version}} rootless={{.Host.Security.Rootless}} cgroups={{.Host.CgroupsVersion}} manager={{.Host.CgroupManager}} controllers={{.Host.CgroupControllers}} runtime={{.Host.OCIRuntime.Name}} storage={{.Store.GraphDriverName}}'
cd /opt/wink
WINK_BIN=/opt/wink/wink-mcp WINK_TEST_PODMAN_SOCKET=\$socket WINK_ROOTLESS_USER=$VM_USER \\
	./integration.test -test.run '^TestRootlessV2EnforcesEveryLimit\$' -test.v -test.count 1 -test.timeout 40m
echo "== RESULT \$?"
systemctl poweroff --no-block
EOF
chmod 755 "$ROOTFS/opt/wink/verify.sh"

kernel=$(ls "$ROOTFS"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$ROOTFS"/boot/initrd.img-* | sort -V | tail -1)
say "making the VM's disk"
rm -f "$DISK"
mkfs.ext4 -q -F -d "$ROOTFS" "$DISK" 6G

say "booting (software emulation; the console is $WORK/console.log)"
rc=0
timeout "$VM_TIMEOUT" qemu-system-x86_64 -machine q35,accel=tcg -cpu max -smp 2 -m 3072 \
	-display none -monitor none -serial "file:$WORK/console.log" -nic none -no-reboot \
	-kernel "$kernel" -initrd "$initrd" \
	-append "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 quiet" \
	-drive "file=$DISK,format=raw,if=virtio" || rc=$?
[ $rc = 0 ] || say "qemu ended with $rc (124: it ran past $VM_TIMEOUT)"

mnt=$(mktemp -d)
mount -o loop,ro "$DISK" "$mnt"
cp "$mnt/opt/wink/result.log" "$WORK/result.log" 2>/dev/null || true
umount "$mnt"
rmdir "$mnt"
[ -f "$WORK/result.log" ] || die "the VM wrote no result; the end of its console:
$(tail -40 "$WORK/console.log")"
cat "$WORK/result.log"
grep -q '^== RESULT 0$' "$WORK/result.log" || die "the test failed in the VM (log: $WORK/result.log)"
say "passed"

#!/usr/bin/env bash
# image.sh builds the wink-mcp image (deploy/Containerfile) with Podman from
# a static wink-mcp binary, and prints its name. `make image` runs it on
# bin/wink-mcp; the integration tests run it on the binary under test.
#   - refuses a dynamically linked binary: the image has no libc;
#   - tags it NAME:<the first 12 hex digits of the binary's SHA-256>, and
#     NAME:<version> when the binary has a release version;
#   - imports it into the Kubernetes test node's containerd when that runs
#     (no registry is reachable there), as `podman save | ctr import`.
# Usage: deploy/image.sh [BINARY] (default bin/wink-mcp).
# Environment: WINK_IMAGE_NAME (default localhost/wink-mcp),
# WINK_IMAGE_IMPORT (auto: when the node's socket exists; yes; no),
# WINK_CLUSTER_CONTAINERD (default /run/wink-mcp/cluster/containerd/containerd.sock).
set -euo pipefail

BIN=${1:-bin/wink-mcp}
NAME=${WINK_IMAGE_NAME:-localhost/wink-mcp}
IMPORT=${WINK_IMAGE_IMPORT:-auto}
SOCKET=${WINK_CLUSTER_CONTAINERD:-/run/wink-mcp/cluster/containerd/containerd.sock}
HERE=$(cd "$(dirname "$0")" && pwd)

die() { echo "image.sh: $*" >&2; exit 1; }

[ -x "$BIN" ] || die "$BIN is not an executable: run make build first"
# ldd succeeds only on a dynamically linked executable.
if ldd "$BIN" >/dev/null 2>&1; then
	die "$BIN is dynamically linked; the image has no libc: build it with CGO_ENABLED=0 (make build does)"
fi
command -v podman >/dev/null || die "podman is not installed: run make setup"

hash=$(sha256sum "$BIN" | cut -c1-12)
tags=(-t "$NAME:$hash")
version=$("$BIN" version | awk '{print $2}')
[ "$version" = dev ] || tags+=(-t "$NAME:$version")

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$BIN" "$context/wink-mcp"
cp "$HERE/Containerfile" "$context/Containerfile"
podman build -q "${tags[@]}" "$context" >/dev/null

case $IMPORT in
auto) [ -S "$SOCKET" ] || IMPORT=no ;;
yes | no) ;;
*) die "WINK_IMAGE_IMPORT=$IMPORT: want auto, yes or no" ;;
esac
if [ "$IMPORT" != no ]; then
	podman save "$NAME:$hash" | ctr --address "$SOCKET" --namespace k8s.io images import - >/dev/null ||
		die "importing $NAME:$hash into the containerd at $SOCKET failed"
fi
echo "$NAME:$hash"

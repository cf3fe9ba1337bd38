#!/usr/bin/env bash
# Builds, once per version, the binaries of the Kubernetes test cluster into
# $CLUSTER_CACHE (see config.sh): kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet and kubectl from k8s.io/kubernetes, etcd from
# go.etcd.io/etcd/server/v3, a static pause binary from Kubernetes'
# pause.c, rancher's local-path-provisioner, and kube-router (the NetworkPolicy
# enforcer) from github.com/cloudnativelabs/kube-router/v2. Each is built in a throwaway module in a temporary folder, never
# in the repository's go.mod. A binary already in the cache is not rebuilt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/config.sh"

log() { printf '%s build: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# The Go build cache of these builds grows by about 3 GB; it lives beside
# the binaries, so that a build cut short resumes, and goes once all are built.
export GOCACHE=$CLUSTER_GOCACHE
export CGO_ENABLED=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# lock makes builds from several checkouts, which share the cache, take
# turns, so that none removes the Go build cache under another; it is taken
# only when something is to be built, so a cache that is complete is never
# waited for.
locked=
lock() {
	[ -n "$locked" ] && return
	mkdir -p "$CLUSTER_CACHE"
	exec 9>"$CLUSTER_CACHE/build.lock"
	flock 9
	locked=1
}

k8s_components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

build_k8s() {
	local missing=()
	for c in "${k8s_components[@]}"; do
		[ -x "$K8S_BIN/$c" ] || missing+=("$c")
	done
	[ ${#missing[@]} -eq 0 ] && return
	lock
	log "kubernetes $K8S_VERSION: ${missing[*]}"
	local mod=$work/k8s
	mkdir -p "$mod"
	cd "$mod"
	go mod init wink-mcp.test/k8sbuild >/dev/null 2>&1
	go mod edit -require "k8s.io/kubernetes@$K8S_VERSION"
	# k8s.io/kubernetes replaces its staging modules with folders of its own
	# repository; a module that requires it must point each at its
	# published version instead. The list comes from its own go.mod.
	local kmod
	kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
	local staging
	staging=$(sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kmod")
	[ -n "$staging" ] || { log "no staging modules found in $kmod"; exit 1; }
	for m in $staging; do
		go mod edit -replace "$m=$m@$K8S_STAGING_VERSION"
	done
	local major=${K8S_VERSION#v}; major=${major%%.*}
	local minor=${K8S_VERSION#v*.}; minor=${minor%%.*}
	local x ldflags=""
	for x in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $x.gitVersion=$K8S_VERSION -X $x.gitMajor=$major -X $x.gitMinor=$minor -X $x.gitTreeState=clean"
	done
	local pkgs=()
	for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	mkdir -p "$K8S_BIN"
	local out=$work/k8s-bin
	mkdir -p "$out"
	GOFLAGS="-mod=mod -buildvcs=false" nice go build -trimpath -ldflags "-s -w$ldflags" -o "$out/" "${pkgs[@]}"
	mv "$out"/* "$K8S_BIN/"
}

build_etcd() {
	[ -x "$ETCD_BIN/etcd" ] && return
	lock
	log "etcd $ETCD_VERSION"
	local mod=$work/etcd
	mkdir -p "$mod"
	cd "$mod"
	go mod init wink-mcp.test/etcdbuild >/dev/null 2>&1
	cat >main.go <<'GO'
// Command etcd is etcd's server, built from its published module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
	go mod edit -require "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
	GOFLAGS="-mod=mod -buildvcs=false" go mod tidy
	mkdir -p "$ETCD_BIN"
	GOFLAGS="-buildvcs=false" nice go build -trimpath -ldflags "-s -w" -o "$work/etcd-bin" .
	mv "$work/etcd-bin" "$ETCD_BIN/etcd"
}

build_pause() {
	[ -x "$PAUSE_BIN/pause" ] && return
	lock
	log "pause from kubernetes $K8S_VERSION"
	local dir
	dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	mkdir -p "$PAUSE_BIN"
	gcc -Os -static -o "$work/pause" -DVERSION="$K8S_VERSION" "$dir/build/pause/linux/pause.c"
	strip "$work/pause"
	mv "$work/pause" "$PAUSE_BIN/pause"
}

build_local_path() {
	[ -x "$LOCAL_PATH_BIN/local-path-provisioner" ] && return
	lock
	log "local-path-provisioner $LOCAL_PATH_VERSION"
	# Its go.mod replaces nothing, so go install builds it as published, in
	# a module of its own.
	mkdir -p "$LOCAL_PATH_BIN"
	(cd "$work" && GOBIN=$work/local-path-bin GOFLAGS="-buildvcs=false" nice go install -trimpath -ldflags "-s -w" \
		"github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION")
	mv "$work/local-path-bin/local-path-provisioner" "$LOCAL_PATH_BIN/"
}

# kube-router's go.mod has no replace directives, so its command builds
# straight from the published module, with its own pinned dependencies.
build_kube_router() {
	[ -x "$KUBE_ROUTER_BIN/kube-router" ] && return
	lock
	log "kube-router $KUBE_ROUTER_VERSION"
	local v=github.com/cloudnativelabs/kube-router/v2/pkg/version
	mkdir -p "$KUBE_ROUTER_BIN"
	(cd "$work" && GOBIN=$work/kube-router-bin GOFLAGS="-buildvcs=false" nice go install -trimpath \
		-ldflags "-s -w -X $v.Version=$KUBE_ROUTER_VERSION" \
		"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION")
	mv "$work/kube-router-bin/kube-router" "$KUBE_ROUTER_BIN/kube-router"
}

start=$(date +%s)
build_pause
build_etcd
build_local_path
build_kube_router
build_k8s
[ -n "$locked" ] && rm -rf "$GOCACHE"
log "all binaries in $CLUSTER_CACHE ($(( $(date +%s) - start )) s)"

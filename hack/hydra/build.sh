#!/usr/bin/env bash
# build.sh builds Ory Hydra, the OAuth 2.1 authorization server the
# integration tests of --oauth-issuer get real access tokens from, into
# /var/cache/wink-mcp/hydra/$HYDRA_VERSION/bin/hydra, once per version:
# a second run takes no time. Hydra is built from its own module (its go.mod
# and go.sum, outside this repository's), with cgo for its SQLite store
# (DSN=memory). See docs/oauth.md.
set -euo pipefail

HYDRA_VERSION=${HYDRA_VERSION:-v2.3.0}
HYDRA_DIR=${HYDRA_DIR:-/var/cache/wink-mcp/hydra/$HYDRA_VERSION}
BIN=$HYDRA_DIR/bin/hydra

log() { printf 'hydra: %s\n' "$*" >&2; }

if [ -x "$BIN" ]; then
	log "$BIN present"
	exit 0
fi
if ! command -v cc >/dev/null; then
	# Hydra's SQLite store is cgo.
	log "installing a C compiler"
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q gcc libc6-dev >/dev/null ||
		{ log "error: Hydra's SQLite store needs a C compiler: apt-get install -y gcc"; exit 1; }
fi
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The module as the proxy serves it, copied to be built in place (its
# replace of the pop fork then applies). Its nested client module is not in
# that zip, so the published one stands in for the replace that names it.
src=$(go mod download -json "github.com/ory/hydra/v2@$HYDRA_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] || { log "error: the Go module proxy did not give github.com/ory/hydra/v2@$HYDRA_VERSION"; exit 1; }
cp -r "$src/." "$work/"
chmod -R u+w "$work"
cd "$work"
go mod edit -dropreplace github.com/ory/hydra-client-go/v2
GOFLAGS="-mod=mod -buildvcs=false" go get github.com/ory/hydra-client-go/v2@v2.2.1 >/dev/null 2>&1
mkdir -p "$HYDRA_DIR/bin"
CGO_ENABLED=1 GOFLAGS="-mod=mod -buildvcs=false" nice go build -trimpath -ldflags "-s -w" \
	-tags sqlite,sqlite_omit_load_extension -o "$BIN.tmp" .
mv "$BIN.tmp" "$BIN"
log "built $BIN in $(( $(date +%s) - start )) s"

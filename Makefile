# wink-mcp: `make setup` prepares a Debian/Ubuntu host and builds the binary;
# `make test` runs every test (unit, protocol and integration against Podman).

# The Podman bindings need these tags to build without cgo; the binary must be
# static because it also runs inside containers whose images may lack libc.
TAGS := remote,containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper
export CGO_ENABLED := 0
GO ?= go
BIN := bin/wink-mcp

.PHONY: setup build test bench clean

setup:
	./scripts/setup.sh
	$(MAKE) build

build:
	$(GO) build -tags '$(TAGS)' -trimpath -o $(BIN) ./cmd/wink-mcp

test: build
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet -tags '$(TAGS)' ./...
	WINK_BIN=$(abspath $(BIN)) $(GO) test -tags '$(TAGS)' -count=1 -timeout 20m ./...

clean:
	rm -rf bin

# Not part of `make test`: several minutes of load. Writes bench-results.json.
bench: build
	$(GO) run -tags '$(TAGS)' ./cmd/wink-bench -bin $(abspath $(BIN))

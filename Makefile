# wink-mcp: `make setup` prepares a Debian/Ubuntu host and builds the binary;
# `make test` runs every test (unit, protocol and integration against Podman);
# `make unit` only those that need neither Podman nor root, in a minute or two.

# The Podman bindings need these tags to build without cgo; the binary must be
# static because it also runs inside containers whose images may lack libc.
TAGS := remote,containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper
# The flags every go command here builds with. They are the same for build,
# vet and test because the build cache keys on them: a vet without
# -trimpath after a build with it compiled the whole tree a second time
# (79 s against 23 s from a cold cache).
BUILDFLAGS := -tags '$(TAGS)' -trimpath
export CGO_ENABLED := 0
GO ?= go
BIN := bin/wink-mcp

.PHONY: setup build image cross dist test unit lint fuzz reliability bench rootless-v2 cluster cluster-down hydra clean

setup:
	./scripts/setup.sh
	$(MAKE) build

build:
	$(GO) build $(BUILDFLAGS) -o $(BIN) ./cmd/wink-mcp

# The wink-mcp image (deploy/Containerfile), built with Podman: the static
# binary alone, the server of deploy/kubernetes and the Kubernetes engine's
# agent image at once. Tagged localhost/wink-mcp:<the binary's hash>, and
# imported into the Kubernetes test node's containerd when it runs.
image: build
	./deploy/image.sh $(BIN)

# The server for macOS and Windows (a Podman machine or a remote service
# runs the containers): bin/wink-mcp-darwin-arm64 and
# bin/wink-mcp-windows-amd64.exe, carrying the static Linux agents in
# embeddedagents/ (package embeddedagents). `make test` builds them, with
# this machine's agent only, so that they cannot rot; `make dist` first
# builds the agents for amd64 and arm64.
CROSS := darwin/arm64 windows/amd64
HOSTARCH := $(shell $(GO) env GOARCH)
cross: build
	cp $(BIN) embeddedagents/wink-mcp-linux-$(HOSTARCH)
	@for target in $(CROSS); do \
		os=$${target%/*}; arch=$${target#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "build bin/wink-mcp-$$os-$$arch$$ext"; \
		GOOS=$$os GOARCH=$$arch $(GO) build -tags '$(TAGS),embedagents' -trimpath -o bin/wink-mcp-$$os-$$arch$$ext ./cmd/wink-mcp || exit 1; \
	done

dist:
	@for arch in amd64 arm64; do \
		echo "build the linux/$$arch agent"; \
		GOOS=linux GOARCH=$$arch $(GO) build $(BUILDFLAGS) -o embeddedagents/wink-mcp-linux-$$arch ./cmd/wink-mcp || exit 1; \
	done
	$(MAKE) cross

# The integration tests of the Kubernetes engine spend most of their time
# waiting for the test node (Pods, Leases, replicas), so they run in a
# second process beside the rest of the integration package; their output
# (bin/test-kubernetes.log) is shown when both are done.
CLUSTER_TESTS := ^(TestCluster|TestKubernetes)
test: build cross cluster hydra
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet $(BUILDFLAGS) ./...
	$(MAKE) lint
	@set -u; export WINK_BIN=$(abspath $(BIN)); \
	echo "go test -run '$(CLUSTER_TESTS)' ./integration > bin/test-kubernetes.log (in the background)"; \
	$(GO) test $(BUILDFLAGS) -count=1 -timeout 60m -run '$(CLUSTER_TESTS)' ./integration > bin/test-kubernetes.log 2>&1 & cluster=$$!; \
	rest=0; \
	echo "go test $$($(GO) list ./... | grep -v /integration$$ | wc -l) packages but integration"; \
	$(GO) test $(BUILDFLAGS) -count=1 -timeout 20m $$($(GO) list ./... | grep -v /integration$$) || rest=1; \
	echo "go test -skip '$(CLUSTER_TESTS)' ./integration"; \
	$(GO) test $(BUILDFLAGS) -count=1 -parallel 8 -timeout 60m -skip '$(CLUSTER_TESTS)' ./integration || rest=1; \
	wait $$cluster || rest=1; \
	echo "--- the Kubernetes engine's integration tests (bin/test-kubernetes.log):"; cat bin/test-kubernetes.log; \
	exit $$rest
	$(MAKE) fuzz

# Every test that needs neither Podman nor root: all packages but
# integration, with -short, which the tests that mount a filesystem or
# reach the Podman service skip. Under the race detector, which catches
# state touched outside the locks whose order workspace's package doc
# writes down. -race needs cgo, so a C compiler (without one the tests
# run without it, and say so); the packages whose tests use their own
# test binary as the containers' agent need it static, so they run
# without -race.
MODULE := github.com/wink-mcp/wink-mcp
STATIC_TEST_PKGS := doctor cmd/wink-mcp
RACE_TEST_PKGS = $(shell $(GO) list ./... | grep -v -x -e '$(MODULE)/integration' $(foreach p,$(STATIC_TEST_PKGS),-e '$(MODULE)/$(p)'))
unit:
	@if command -v $${CC:-cc} >/dev/null; then \
		echo "CGO_ENABLED=1 $(GO) test $(BUILDFLAGS) -race -short -count=1 (all but integration $(STATIC_TEST_PKGS))"; \
		CGO_ENABLED=1 $(GO) test $(BUILDFLAGS) -race -short -count=1 $(RACE_TEST_PKGS); \
	else \
		echo "no C compiler ($${CC:-cc}): the unit tests run without -race"; \
		$(GO) test $(BUILDFLAGS) -short -count=1 $(RACE_TEST_PKGS); \
	fi
	$(GO) test $(BUILDFLAGS) -short -count=1 $(addprefix ./,$(STATIC_TEST_PKGS))

# staticcheck at a pinned version: `go run` fetches it from the module
# proxy the first time and caches the built tool, so a fresh machine needs
# nothing else. It stays out of go.mod (no tool directive): its own
# dependencies would join the server's module graph and raise them
# (golang.org/x/sync, for one).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) -tags '$(TAGS)' ./...

# Go fuzzing of path rules, argument decoding and the agent's framing, for a
# fixed budget per target (10 s in `make test`, a minute in `make reliability`).
FUZZTIME ?= 10s
fuzz:
	$(GO) test $(BUILDFLAGS) -run '^$$' -fuzz '^FuzzClean$$' -fuzztime $(FUZZTIME) ./wspath
	$(GO) test $(BUILDFLAGS) -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./schema
	$(GO) test $(BUILDFLAGS) -run '^$$' -fuzz '^FuzzFrames$$' -fuzztime $(FUZZTIME) ./wire

# The whole reliability suite with the 10-minute load soak (and the ssh
# test, whose attacks make the ssh-agent row); writes
# reliability-results.json and regenerates the figures of docs/reliability.md.
# `make test` runs the same suite with a 30-second soak.
SOAK ?= 10m
reliability: build
	CI=true WINK_SOAK=$(SOAK) WINK_RELIABILITY_OUT=$(abspath reliability-results.json) WINK_BIN=$(abspath $(BIN)) \
		$(GO) test $(BUILDFLAGS) -count=1 -timeout 60m -run '^(TestReliability|TestSSHAgentGitClone$$)' -v ./integration
	$(MAKE) fuzz FUZZTIME=60s
	WINK_BIN=$(abspath $(BIN)) $(GO) test $(BUILDFLAGS) -count=1 -run '^TestDocsReliabilitySection$$' ./integration -update

clean:
	rm -rf bin embeddedagents/wink-mcp-linux-*

# Not part of `make test`: several minutes of load. Writes bench-results.json
# and regenerates the Speed table of docs/speed.md from it. Its Kubernetes
# rows run on the test node, so it starts the cluster first, as `make test`
# does; wink-bench stops, saying so, when the node does not answer.
bench: build cluster
	$(GO) run $(BUILDFLAGS) ./cmd/wink-bench -bin $(abspath $(BIN))
	$(GO) test $(BUILDFLAGS) -count=1 -run '^TestDocsSpeedSection$$' ./cmd/wink-bench -update

# Not part of `make test`: rootless Podman on cgroups v2, verified in a
# Debian 12 VM under software emulation (10-30 minutes; see
# docs/where-it-runs.md).
rootless-v2:
	./scripts/rootless-v2.sh

# A single-node Kubernetes cluster for the Kubernetes engine's tests, which
# `make test` starts first: built from source into /var/cache/wink-mcp
# (about 24 minutes the first time on a loaded 2-core machine, under a
# second once up; see docs/kubernetes-test-cluster.md). Its kubeconfig:
# /var/lib/wink-mcp/cluster/admin.kubeconfig. `make setup`, for a host that
# only serves, does not build it.
cluster:
	./hack/cluster/up.sh

cluster-down:
	./hack/cluster/down.sh

# Ory Hydra, the OAuth 2.1 authorization server the --oauth-issuer tests get
# real tokens from, built once per version into /var/cache/wink-mcp/hydra
# (`make setup` builds it too; see docs/oauth.md).
hydra:
	./hack/hydra/build.sh

# intentd: make targets. A bare `make` lists them.

GO          ?= go
BIN         := bin
TOOLS       := $(BIN)/tools
STATICCHECK := $(TOOLS)/staticcheck
STATICCHECK_VERSION := v0.8.2
# protoc-gen-go is pinned to the google.golang.org/protobuf that go.mod resolves, so the
# generated code matches the runtime it is linked with.
PROTOC_GEN_GO := $(TOOLS)/protoc-gen-go
PROTOBUF_VERSION = $(shell $(GO) list -m -f '{{.Version}}' google.golang.org/protobuf)
PROTOS      := cluster/clusterpb/intent.proto cluster/clusterpb/log.proto
FUZZTIME    ?= 10s
BENCHTIME   ?= 1s
PKGS        := ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build intentd and intentctl into bin/
	@mkdir -p $(BIN)
	$(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/...

.PHONY: run
run: ## run intentd with the embedded defaults (Pebble in ./data, the demo catalog)
	@if [ -d cmd/intentd ]; then $(GO) run ./cmd/intentd $(ARGS); \
	else echo "intentd: the service command does not exist yet; 'make test' runs what does" >&2; exit 1; fi

.PHONY: test
test: ## vet, every test with the race detector, the end-to-end suite again on NATS, and the cluster member tests (what CI runs)
	$(GO) vet $(PKGS)
	@# cmd/intentd's end-to-end suite runs for minutes; past go test's default 10m
	@# a loaded machine failed it whole.
	$(GO) test -race -count=1 -timeout 25m $(PKGS)
	INTENTD_TEST_STORE=nats $(GO) test -race -count=1 -timeout 25m ./cmd/intentd/
	@# protoactor-go races with itself with several cluster members in one process, so
	@# the tests of real members are built without the race detector (docs/cluster.md).
	$(GO) test -count=1 ./cluster/...
	$(GO) test -count=1 -run Cluster ./actors/

.PHONY: chaos
chaos: ## the fault-injection suite (minutes): a three-node cluster on three NATS servers, under load, through kills, pauses and stalls; CHAOS_ROUNDS rounds of each (3)
	INTENTD_CHAOS=1 INTENTD_CHAOS_ROUNDS=$${CHAOS_ROUNDS:-3} $(GO) test -count=1 -v -timeout 60m -run '^(TestChaos|TestClusterKillsUnderLoad)$$' ./cmd/intentd/

.PHONY: cluster-memory
cluster-memory: ## a member's memory after loads (minutes): three times 10,000 intents through three nodes on three NATS servers and 30 s quiet; each member's RSS, grains and heap profile (bin/cluster-memory); and what protoactor's process registry keeps; MEMORY_BIN=PATH measures another intentd build
	INTENTD_CLUSTER_MEMORY=1 $(GO) test -count=1 -v -run '^TestProcessRegistryCeiling$$' ./actors/
	INTENTD_CLUSTER_MEMORY=1 INTENTD_CLUSTER_MEMORY_OUT=$(abspath $(BIN))/cluster-memory INTENTD_CLUSTER_MEMORY_BIN=$${MEMORY_BIN:-} $(GO) test -count=1 -v -timeout 30m -run '^TestClusterMemoryAfterLoad$$' ./cmd/intentd/

.PHONY: cluster-cost
cluster-cost: ## what an intent costs, created and decided (minutes): one node on three NATS servers, then clusters of 1 to 4 members on them, one after the other, through intentbench decide; the table in bin/cluster-cost (COST_ROUNDS, COST_RATE, COST_DURATION, COST_SETUPS=1,c1,c2,c3,c4 and cN+K, K members more the load does not reach, and cN/L, the log kept by the first L members only; one node given twice, as in 1,c3,1, is measured before and after and the clusters are read against the mean, COST_PROFILE=1 keeps CPU profiles, COST_BIN=PATH measures another intentd build)
	INTENTD_CLUSTER_COST=1 INTENTD_CLUSTER_COST_OUT=$(abspath $(BIN))/cluster-cost INTENTD_CLUSTER_COST_ROUNDS=$${COST_ROUNDS:-1} INTENTD_CLUSTER_COST_RATE=$${COST_RATE:-300} INTENTD_CLUSTER_COST_DURATION=$${COST_DURATION:-10s} INTENTD_CLUSTER_COST_SETUPS=$${COST_SETUPS:-1,c1,c2,c3,c4} INTENTD_CLUSTER_COST_PROFILE=$${COST_PROFILE:-} INTENTD_CLUSTER_COST_BIN=$${COST_BIN:-} $(GO) test -count=1 -v -timeout 60m -run '^TestClusterCost$$' ./cmd/intentd/

.PHONY: upgrade-test
upgrade-test: ## the upgrade tests (minutes): the previous release built from git history, a three-node cluster of it replaced one node at a time under load, and its Pebble folder opened by this build
	INTENTD_UPGRADE_TEST=1 $(GO) test -count=1 -v -timeout 30m -run '^(TestRollingUpgrade|TestUpgradePebbleFolder)$$' ./cmd/intentd/

.PHONY: test-nats
test-nats: ## the end-to-end suite on NATS: INTENTD_TEST_STORE=nats (embedded) or nats://HOST:PORT
	INTENTD_TEST_STORE=$${INTENTD_TEST_STORE:-nats} $(GO) test -race -count=1 ./cmd/intentd/

.PHONY: testrace
testrace: ## every test with the race detector, without vet
	$(GO) test -race -count=1 $(PKGS)

.PHONY: testshort
testshort: ## the quick tests, without the race detector
	$(GO) test -short -count=1 $(PKGS)

$(STATICCHECK):
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: lint
lint: $(STATICCHECK) ## gofmt check, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)

$(PROTOC_GEN_GO): go.mod
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS)) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOBUF_VERSION)
	@touch $@

.PHONY: proto
proto: $(PROTOC_GEN_GO) ## regenerate the Go code of the .proto files (protoc: apt-get install protobuf-compiler)
	@command -v protoc >/dev/null || { echo "protoc is missing: apt-get install protobuf-compiler" >&2; exit 1; }
	@for f in $(PROTOS); do \
		echo "protoc $$f"; \
		protoc --plugin=protoc-gen-go=$(abspath $(PROTOC_GEN_GO)) --proto_path=$$(dirname $$f) \
			--go_out=$$(dirname $$f) --go_opt=paths=source_relative $$(basename $$f) || exit 1; \
	done

.PHONY: bench
bench: ## every benchmark, with allocations (BENCHTIME=1s)
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) $(PKGS)

.PHONY: cluster
cluster: ## three intentd on loopback as one cluster, each embedding a NATS server (docs/cluster.md)
	@mkdir -p $(BIN)
	$(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/...entd ./cmd/intentctl
	@scripts/cluster.sh $(BIN) cluster-data

.PHONY: load
load: ## the load scenarios at a few minutes' size (docs/benchmarks.md); LOADFLAGS=... adds flags to each
	@mkdir -p $(BIN)
	$(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/...entd ./cmd/intentbench
	$(BIN)/intentbench baseline  --intentd $(BIN)/intentd --duration 20s $(LOADFLAGS)
	$(BIN)/intentbench intake-floor --duration 20s $(LOADFLAGS)
	$(BIN)/intentbench decide    --intentd $(BIN)/intentd --rate 1000 --duration 20s $(LOADFLAGS)
	$(BIN)/intentbench decide-floor --rate 1000 --duration 20s $(LOADFLAGS)
	$(BIN)/intentbench fanout    --intentd $(BIN)/intentd --subscribers 2000 --rate 100 --duration 10s $(LOADFLAGS)
	$(BIN)/intentbench soak-open --intentd $(BIN)/intentd --intents 100000 --settle 15s $(LOADFLAGS)

.PHONY: fuzz
fuzz: ## a short run of every fuzz target (FUZZTIME=10s each)
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		dir=$$(dirname $$f); \
		for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
			echo "== $$dir $$t"; \
			$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$dir; \
		done; \
	done

.PHONY: crash
crash: ## the crash test at full size: intentd killed with SIGKILL 25 times under load
	$(GO) test -race -count=1 -run '^TestCrashRecovery$$' -v ./cmd/intentd -crash.kills=25

# The image builder: podman, or docker where podman is missing.
IMAGE_BUILDER ?= $(shell command -v podman || command -v docker)
IMAGE         ?= localhost/intentd:dev
IMAGE_FROM    ?= host

.PHONY: image
image: ## the container image IMAGE (localhost/intentd:dev): a static intentd built here, FROM scratch (IMAGE_FROM=source builds it in the Go image)
	@[ -n "$(IMAGE_BUILDER)" ] || { echo "neither podman nor docker is installed: apt-get install podman" >&2; exit 1; }
	@if [ "$(IMAGE_FROM)" = host ]; then GO=$(GO) VERSION=$(VERSION) scripts/image-rootfs.sh $(BIN)/image; fi
	$(IMAGE_BUILDER) build $(if $(findstring podman,$(IMAGE_BUILDER)),--format docker) --target $(IMAGE_FROM) \
		$(if $(VERSION),--build-arg VERSION=$(VERSION)) -t $(IMAGE) -f Containerfile .

.PHONY: clean
clean: ## remove bin/
	rm -rf $(BIN)

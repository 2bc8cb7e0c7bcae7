# actorlet — see `make help`.
GO       ?= go
BIN      := bin
ROOT_DIR ?= $(CURDIR)/.actorlet
NODE     ?= $(shell hostname)
ARGS     ?=
DURATION ?= 30m
SEED     ?= 1
AGENTS   ?= 5

.DEFAULT_GOAL := help

.PHONY: help build run test fuzz e2e bench chaos lint clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-8s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/actorlet and bin/actorletctl
	@echo "Building bin/actorlet and bin/actorletctl (go build -v lists each package it compiles; the first build on a fresh machine compiles every dependency and takes a minute or more)..."
	$(GO) build -v -o $(BIN)/ ./cmd/...

run: build ## Run a node on embedded defaults (embedded NATS, process runtime) under ./.actorlet
	@echo "Starting node $(NODE) on embedded defaults (NATS on 127.0.0.1:4222 unless ARGS gives --nats-port; the process runtime), state in $(ROOT_DIR), static pods from $(ROOT_DIR)/manifests. Ctrl-C stops the node; its pods keep running and the next make run adopts them."
	$(BIN)/actorlet --root-dir $(ROOT_DIR) --node-name $(NODE) --pod-manifest-path $(ROOT_DIR)/manifests $(ARGS)

test: ## Run the unit and integration tests with the race detector
	$(GO) test -race -count=1 -timeout 9m ./...

# FUZZ_TARGETS: package:FuzzTarget for every decoder of outside input
# (go test -fuzz takes one target per invocation).
FUZZTIME     ?= 10s
FUZZ_TARGETS := ./messages/validation:FuzzDecodePod ./messages/validation:FuzzDecodeObjects \
	./sources/file:FuzzStaticPod ./cmd/actorletctl:FuzzSplitManifests \
	./node/commands:FuzzCommandRequest ./node/commands:FuzzParseCRILogLine \
	./messages/wire:FuzzDesiredKey ./messages/wire:FuzzNameEncoding \
	./cri/crilogs:FuzzTail ./cri/volume:FuzzWritePaths

fuzz: ## Run each fuzz target for FUZZTIME (10s; longer by hand: make fuzz FUZZTIME=10m)
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

e2e: build ## Run the end-to-end suite against a real containerd (root only)
	@if [ "$$(id -u)" != "0" ]; then echo "make e2e needs root: it installs and starts containerd"; exit 1; fi
	bash test/e2e/setup.sh
	$(GO) test -tags e2e -count=1 -timeout 60m -v ./test/e2e/...

bench: build ## Run the benchmark harness and print its tables
	$(GO) run ./test/bench $(ARGS)

chaos: ## Run the chaos test long (DURATION=30m SEED=1 AGENTS=5) and print its table
	$(GO) test -count=1 -timeout 0 -v -run '^TestChaos$$' ./test/chaos -chaos.duration=$(DURATION) -chaos.seed=$(SEED) -chaos.agents=$(AGENTS)

lint: ## gofmt, go vet (e2e files too) and the dead-code check
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/
	@# Functions nothing reaches from a main or a test (e2e included): delete them.
	@out=$$($(GO) tool deadcode -test -tags e2e ./...); if [ -n "$$out" ]; then echo "dead code (golang.org/x/tools/cmd/deadcode):"; echo "$$out"; exit 1; fi

clean: ## Remove build output and the local run directory (refuses while its node or pods run)
	@if [ -d "$(ROOT_DIR)" ]; then \
		echo "Checking that nothing of $(ROOT_DIR) still runs (bin/actorlet running)..."; \
		$(GO) build -o $(BIN)/ ./cmd/actorlet && $(BIN)/actorlet running --root-dir "$(ROOT_DIR)" || { echo "make clean: refused, $(ROOT_DIR) kept"; exit 1; }; \
	fi
	rm -rf $(BIN) $(ROOT_DIR)

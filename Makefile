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

.PHONY: help build run test e2e bench chaos lint clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-8s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/actorlet and bin/actorletctl
	$(GO) build -o $(BIN)/ ./cmd/...

run: build ## Run a node on embedded defaults (embedded NATS, process runtime) under ./.actorlet
	$(BIN)/actorlet --root-dir $(ROOT_DIR) --node-name $(NODE) --pod-manifest-path $(ROOT_DIR)/manifests $(ARGS)

test: ## Run the unit and integration tests with the race detector
	$(GO) test -race -count=1 -timeout 9m ./...

e2e: build ## Run the end-to-end suite against a real containerd (root only)
	@if [ "$$(id -u)" != "0" ]; then echo "make e2e needs root: it installs and starts containerd"; exit 1; fi
	bash test/e2e/setup.sh
	$(GO) test -tags e2e -count=1 -timeout 60m -v ./test/e2e/...

bench: build ## Run the benchmark harness and print its tables
	$(GO) run ./test/bench $(ARGS)

chaos: ## Run the chaos test long (DURATION=30m SEED=1 AGENTS=5) and print its table
	$(GO) test -count=1 -timeout 0 -v -run '^TestChaos$$' ./test/chaos -chaos.duration=$(DURATION) -chaos.seed=$(SEED) -chaos.agents=$(AGENTS)

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean: ## Remove build output and the local run directory
	rm -rf $(BIN) $(ROOT_DIR)

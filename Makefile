# agentd — run `make help` for the targets.
GO        ?= go
BIN       ?= bin
GOFLAGS_T ?= -race -count=1
FUZZTIME  ?= 20s
GUEST     ?= docker

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show the targets and what they do.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Install the Debian packages and Go modules the build, tests and exercise need.
	./scripts/install-deps.sh

.PHONY: build
build: deps ## Build agentd (cgo, X11) and agentctl (pure Go) into ./bin.
	@mkdir -p $(BIN)
	CGO_ENABLED=1 $(GO) build -o $(BIN)/agentd ./cmd/agentd
	CGO_ENABLED=0 $(GO) build -o $(BIN)/agentctl ./cmd/agentctl

.PHONY: test
test: build ## Run every test (unit and integration on a private Xvfb) with -race.
	CGO_ENABLED=0 $(GO) build ./guest/... ./runner/... ./scaling/... ./wire/... ./cmd/agentctl/...
	$(GO) vet ./...
	AGENTD_REQUIRE_X=1 AGENTD_BIN=$(CURDIR)/$(BIN) $(GO) test $(GOFLAGS_T) ./...

.PHONY: exercise
exercise: build $(if $(filter docker,$(GUEST)),docker-image) ## Run the no-API-key exercise in a Docker guest (GUEST=local: on this machine).
	$(BIN)/agentctl exercise --guest $(GUEST)

.PHONY: bench
bench: build ## Measure agentd against scrot, import, xdotool, kbinani and robotgo on a local guest (agentctl bench).
	$(BIN)/agentctl bench

.PHONY: bench-go
bench-go: build ## Run the Go micro-benchmarks (capture, encode, scale, input, end to end).
	AGENTD_REQUIRE_X=1 $(GO) test -run '^$$' -bench . -benchmem -count 5 ./capture/ ./scaling/ ./actions/ ./agentd/

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 20s).
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./actions/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./agentd/
	$(GO) test -run '^$$' -fuzz '^FuzzToScreen$$' -fuzztime $(FUZZTIME) ./scaling/
	$(GO) test -run '^$$' -fuzz '^FuzzNew$$' -fuzztime $(FUZZTIME) ./scaling/

.PHONY: clean
clean: ## Remove build outputs.
	rm -rf $(BIN)

.PHONY: docker-base
docker-base: ## Make the Docker guest's base images when missing and unpullable (debootstrap; root).
	./docker/make-base-images.sh

.PHONY: docker-image
docker-image: docker-base ## Build the Docker guest image agentd-guest through the Engine API.
	$(GO) run ./docker/cmd/guest-image -context .

.PHONY: docker-test
docker-test: docker-base ## Run the Docker guest's integration tests; they fail (not skip) without an engine.
	AGENTD_REQUIRE_DOCKER=1 $(GO) test -count=1 -timeout 60m -v ./docker/...

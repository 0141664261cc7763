# agentd — run `make help` for the targets.
GO        ?= go
BIN       ?= bin
GOFLAGS_T ?= -race -count=1
FUZZTIME  ?= 20s
GUEST     ?= docker

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show the targets and what they do.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[1m%-18s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## Install the Debian packages and Go modules the build, tests and exercise need.
	./tools/scripts/install-deps.sh

.PHONY: build
build: deps ## Build agentd and its bench probe (cgo, X11) and agentctl (pure Go) into ./bin.
	@mkdir -p $(BIN)
	CGO_ENABLED=1 $(GO) build -o $(BIN)/agentd ./cmd/agentd
	CGO_ENABLED=1 $(GO) build -o $(BIN)/agentd-bench-probe ./cmd/agentd-bench-probe
	CGO_ENABLED=0 $(GO) build -o $(BIN)/agentctl ./cmd/agentctl

.PHONY: test
test: build ## Run every test (unit and integration on a private Xvfb) with -race.
	CGO_ENABLED=0 $(GO) build ./actions/... ./runner/computer/... ./agentd/executor/... ./agentd/input/... ./guest/... ./runner/... ./scaling/... ./actions/wire/... ./cmd/agentctl/... ./examples/...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/agentctl # the host side on a Mac with Apple silicon
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
	AGENTD_REQUIRE_X=1 $(GO) test -run '^$$' -bench . -benchmem -count 5 ./capture/ ./scaling/ ./agentd/input/xtest/ ./agentd/

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 20s); a finding is saved under testdata/fuzz and fails.
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzDecode ./actions/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzExecute ./agentd/executor/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzParseKey ./actions/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzKeysym ./agentd/input/xtest/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzDecodeRequest ./agentd/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzParseServerMessage ./guest/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzReadFrame ./agentd/codeexec/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzToScreen ./scaling/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzNew ./scaling/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzEncode ./capture/pngenc/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzDecodeArguments ./actions/browser/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzParseJSON ./actions/browser/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzSafeInteger ./actions/browser/ $(FUZZTIME)
	GO=$(GO) ./tools/scripts/fuzz-one.sh FuzzReportedURL ./actions/browser/ $(FUZZTIME)

# The fault, attack and soak tests `make reliability` runs (with -race, on
# private Xvfb displays), and the soak's length: SOAK screenshots and SOAK
# actions (the full soak: SOAK=10000).
RELIABILITY_RUN ?= Auth|Sandbox|Token|ListenAddr|Refused|Killed|Malformed|Oversized|Stalled|Dropped|Busy|Health|XServerRestarted|ReconnectsAfterXRestart|Failure|Cancel|Retry|Hangup|Timeout|Truncated|ServerErrors|Record|E2ERunner|Soak|Takeover|HandBack|Handback|BrowserPolicy|BrowserSafety|BrowserConsent|Hide|Private|Ensure
SOAK ?= 100

.PHONY: reliability
reliability: build ## Run the fault, security and soak tests (SOAK=N), then every fuzz target for 10s.
	AGENTD_REQUIRE_X=1 AGENTD_BIN=$(CURDIR)/$(BIN) AGENTD_SOAK=$(SOAK) $(GO) test $(GOFLAGS_T) -timeout 30m -v \
		-run '$(RELIABILITY_RUN)' ./agentd/ ./agentd/codeexec/ ./agentd/executor/ ./agentd/input/xtest/ ./cmd/agentd/ ./runner/ ./tools/respserver/ ./console/ ./cmd/agentctl/ ./actions/browser/ ./runner/browser/ ./runner/session/ ./runner/ledger/ ./actions/browserrpc/ ./internal/hidepaths/ ./internal/statedir/ > $(BIN)/reliability.log 2>&1; \
		status=$$?; grep -E '^(--- |FAIL|ok|panic)|soak:' $(BIN)/reliability.log; \
		[ $$status -eq 0 ] || { echo "make reliability: tests failed, see $(BIN)/reliability.log"; exit $$status; }
	$(MAKE) fuzz FUZZTIME=10s

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

# Cross builds of agentd for Linux guests (the VM guest copies one in): cgo
# with Debian's cross compiler for the target and that architecture's X11
# libraries through multiarch (make cross-deps installs both).
CROSS_TRIPLE_arm64 := aarch64-linux-gnu
CROSS_TRIPLE_amd64 := x86_64-linux-gnu
# pickup-form, the exercise's form server, is pure Go.
cross_agentd = mkdir -p $(BIN) && CGO_ENABLED=1 GOOS=linux GOARCH=$(1) CC=$(CROSS_TRIPLE_$(1))-gcc \
	$(GO) build -trimpath -o $(BIN)/agentd-linux-$(1) ./cmd/agentd && \
	CGO_ENABLED=0 GOOS=linux GOARCH=$(1) $(GO) build -trimpath -o $(BIN)/pickup-form-linux-$(1) ./tools/exercise/cmd/pickup-form

.PHONY: cross-deps
cross-deps: ## Install the cross compilers, arm64/amd64 X11 libraries (multiarch) and qemu-user.
	./tools/scripts/cross-deps.sh

.PHONY: agentd-linux-arm64
agentd-linux-arm64: ## Cross-compile agentd (cgo) and pickup-form for linux/arm64 guests into ./bin.
	$(call cross_agentd,arm64)

.PHONY: agentd-linux-amd64
agentd-linux-amd64: ## Compile agentd (cgo) and pickup-form for linux/amd64 guests into ./bin.
	$(call cross_agentd,amd64)

.PHONY: vm-test
vm-test: agentd-linux-arm64 ## VM guest tests: fake limactl, arm64 agentd under qemu-user, provisioning in Debian (minutes).
	$(MAKE) agentd-linux-$$($(GO) env GOARCH)
	AGENTD_REQUIRE_CROSS=1 AGENTD_REQUIRE_X=1 AGENTD_TEST_PROVISION=1 AGENTD_ARM64_BIN=$(CURDIR)/$(BIN)/agentd-linux-arm64 \
		$(GO) test -race -count=1 -timeout 40m -v ./vm/

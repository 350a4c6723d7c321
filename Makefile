GO      ?= go
BIN     ?= bin
# What `runr version` prints; .goreleaser.yaml sets the same three.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: all build test test-short toolchains agents test-agents record-agents lint docs demo bench fuzz soak release-snapshot release-check clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/runr ./cmd/runr

# The whole suite: unit tests, end-to-end tests of the built binary, the
# CI examples of docs/examples against the Kubernetes API types (tests/k8s,
# a module of its own, so k8s.io/api stays out of runr's), and a short fuzz
# of the stop-condition decoder.
test: lint
	$(GO) test -count=1 ./...
	cd tests/k8s && $(GO) test -count=1 ./...
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 10s ./internal/stopconditions

# The test toolchains the end-to-end tests of verify.coverage run for real
# (tests/untested_test.go): pytest and coverage.py from Debian, at the
# versions pinned here, for Debian's /usr/bin/python3, installed with
# apt-get where missing; and node 20.11 or later (its lcov test reporter) at
# /usr/bin/node, which is checked, not installed (Debian's own nodejs is
# older). .ci/run makes them a requirement: there the tests fail rather
# than skip without them.
PYTEST_DEB_VERSION ?= 7.2.1-2
COVERAGE_DEB_VERSION ?= 6.5.0+dfsg1-2+b1
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

toolchains:
	@if /usr/bin/python3 -c 'import pytest, coverage' 2>/dev/null; then \
		echo "pytest and coverage.py are installed for /usr/bin/python3"; \
	else \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			python3-pytest=$(PYTEST_DEB_VERSION) python3-coverage=$(COVERAGE_DEB_VERSION); \
	fi
	@/usr/bin/node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=11)?0:1)' 2>/dev/null || \
		{ echo "node 20.11 or later is needed at /usr/bin/node (its lcov test reporter): install it from nodejs.org or NodeSource" >&2; exit 1; }
	@echo "node $$(/usr/bin/node --version) is at /usr/bin/node"

# The real agent CLIs under runr, against scripted model APIs on
# 127.0.0.1: installs each CLI, at the version pinned here, into
# $(AGENTS_CACHE) with npm (once: an installed CLI of that version is kept),
# then runs the integration test with it first on PATH (without it the test
# is skipped).
AGENTS_CACHE ?= .cache/agents
# The versions and packages are those of configs/agent-versions, which
# action.yml reads too: Claude Code, Gemini CLI (Gemini API), opencode (an
# OpenAI-compatible provider), Codex CLI (OpenAI Responses API) and Qwen
# Code (OpenAI Chat Completions).
agent_pin = $(shell awk '$$1 == "$(1)" { print $$$(2) }' configs/agent-versions)
CLAUDE_CODE_VERSION ?= $(call agent_pin,claude,3)
GEMINI_CLI_VERSION ?= $(call agent_pin,gemini,3)
OPENCODE_VERSION ?= $(call agent_pin,opencode,3)
CODEX_VERSION ?= $(call agent_pin,codex,3)
QWEN_CODE_VERSION ?= $(call agent_pin,qwen,3)
AGENTS_PATH := $(abspath $(AGENTS_CACHE))/node_modules/.bin

agents:
	@if "$(AGENTS_PATH)/claude" --version 2>/dev/null | grep -qx '$(CLAUDE_CODE_VERSION) (Claude Code)'; then \
		echo "Claude Code $(CLAUDE_CODE_VERSION) is installed in $(AGENTS_CACHE)"; \
	else \
		npm install --prefix $(AGENTS_CACHE) --no-audit --no-fund $(call agent_pin,claude,2)@$(CLAUDE_CODE_VERSION); \
	fi
	@if "$(AGENTS_PATH)/gemini" --version 2>/dev/null | grep -qx '$(GEMINI_CLI_VERSION)'; then \
		echo "Gemini CLI $(GEMINI_CLI_VERSION) is installed in $(AGENTS_CACHE)"; \
	else \
		npm install --prefix $(AGENTS_CACHE) --no-audit --no-fund $(call agent_pin,gemini,2)@$(GEMINI_CLI_VERSION); \
	fi
	@if "$(AGENTS_PATH)/opencode" --version 2>/dev/null | grep -qx '$(OPENCODE_VERSION)'; then \
		echo "opencode $(OPENCODE_VERSION) is installed in $(AGENTS_CACHE)"; \
	else \
		npm install --prefix $(AGENTS_CACHE) --no-audit --no-fund $(call agent_pin,opencode,2)@$(OPENCODE_VERSION); \
	fi
	@if "$(AGENTS_PATH)/codex" --version 2>/dev/null | grep -qx 'codex-cli $(CODEX_VERSION)'; then \
		echo "Codex CLI $(CODEX_VERSION) is installed in $(AGENTS_CACHE)"; \
	else \
		npm install --prefix $(AGENTS_CACHE) --no-audit --no-fund $(call agent_pin,codex,2)@$(CODEX_VERSION); \
	fi
	@if "$(AGENTS_PATH)/qwen" --version 2>/dev/null | grep -qx '$(QWEN_CODE_VERSION)'; then \
		echo "Qwen Code $(QWEN_CODE_VERSION) is installed in $(AGENTS_CACHE)"; \
	else \
		npm install --prefix $(AGENTS_CACHE) --no-audit --no-fund $(call agent_pin,qwen,2)@$(QWEN_CODE_VERSION); \
	fi

test-agents: agents
	PATH="$(AGENTS_PATH):$$PATH" $(GO) test -count=1 -v -run '^(TestClaudeCLI.*|TestCLIIntegration.*)$$' ./tests

# Re-records the agent CLIs' outputs that the adapters' unit tests replay
# (internal/agents/testdata/<kind>), from the CLIs `make agents` installs,
# against the scripted local APIs.
record-agents: agents
	PATH="$(AGENTS_PATH):$$PATH" RUNR_RECORD=1 $(GO) test -count=1 -v -run '^TestRecord.*$$' ./tests

test-short:
	$(GO) test -short ./...

# gofmt, go vet, staticcheck (its version pinned by go.mod's tool
# directive), and go.mod/go.sum as `go mod tidy` would leave them; the same
# for the module of tests/k8s.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) mod tidy -diff
	cd tests/k8s && $(GO) vet ./... && "$$($(GO) -C ../.. tool -n staticcheck)" ./... && $(GO) mod tidy -diff

# docs/stop-reasons.md is generated from the registry.
docs:
	$(GO) run ./cmd/runr reasons --markdown > docs/stop-reasons.md

demo:
	bash examples/demo/run.sh

# The figures of docs/performance.md: the Go benchmarks of the packages,
# then tests/bench, which times the built runr against baselines run in the
# same invocation (the Claude Code row with the CLI `make agents` installs),
# prints each figure with its target, and fails when one is missed.
# BENCH_RUN picks rows: make bench BENCH_RUN=TestBench/status
BENCH_RUN ?= ^TestBench$$

bench: agents
	$(GO) test -run '^$$' -bench . -benchmem ./...
	PATH="$(AGENTS_PATH):$$PATH" RUNR_BENCH=1 $(GO) test -count=1 -v -timeout 0 -run '$(BENCH_RUN)' ./tests/bench

# Every fuzz target, FUZZTIME each: go test fuzzes one target per run. Seed
# corpora live in each package's testdata/fuzz; a crasher is written there.
FUZZTIME ?= 10s
FUZZ_TARGETS := \
	stopconditions:FuzzDecode \
	config:FuzzLoad \
	state:FuzzLoadFile state:FuzzTimelineReader \
	task:FuzzMilestones coverage:FuzzReadProfile \
	agents:FuzzClaudeParser agents:FuzzCodexParser agents:FuzzGeminiParser \
	agents:FuzzOpencodeParser agents:FuzzAiderParser agents:FuzzCommandParser \
	agents:FuzzQwenParser \
	agents:FuzzSignalDetector agents:FuzzAiderErrorFilter \
	tests:FuzzStoreDamage

# A target's package is ./internal/<pkg>, or ./tests for the end-to-end
# ones (FuzzStoreDamage: runr over a damaged run directory).
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t#*:}; dir=./internal/$$pkg; \
		if [ "$$pkg" = tests ]; then dir=./tests; fi; \
		echo "fuzz $$fn ($(FUZZTIME)) in $$dir"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$dir; \
	done

# The kill -9 campaign at length: SOAK_TRIALS runs of runr killed with
# SIGKILL at random instants, each resumed and checked (state.json, resume,
# completion, orphan processes, temporary files). It prints its seed; replay
# with RUNRTEST_SEED=N. `make test` runs 20 trials of it. SOAK_PARALLEL_TRIALS
# parallel runs (--parallel 3, two groups) likewise; `make test` runs 4.
SOAK_TRIALS ?= 1000
SOAK_PARALLEL_TRIALS ?= 300

soak:
	RUNR_SOAK=1 RUNR_SOAK_TRIALS=$(SOAK_TRIALS) RUNR_SOAK_PARALLEL_TRIALS=$(SOAK_PARALLEL_TRIALS) $(GO) test -count=1 -v -timeout 0 -run '^TestSoakKill9$$|^TestSoakParallelKill9$$|^TestKill9NeverCorruptsState$$' ./tests

# The release archives for linux and darwin on amd64 and arm64, with
# checksums, built locally into dist/ without publishing anything. GoReleaser
# runs from the Go module proxy at the version pinned here; it is not in
# go.mod, and neither `make test` nor `make lint` runs it.
GORELEASER_VERSION ?= v2.15.1
GORELEASER := $(GO) run github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

release-snapshot:
	$(GORELEASER) release --snapshot --clean

release-check:
	$(GORELEASER) check

clean:
	rm -rf $(BIN) dist

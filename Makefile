# usersync — run `make help` for the targets.
#
# Every target that needs PostgreSQL starts a throwaway cluster (deploy/dev/postgres.sh)
# unless DATABASE_URL is already set, in which case it uses that database.

SHELL        := bash
.SHELLFLAGS  := -eu -o pipefail -c
GO           ?= go
PG           := deploy/dev/postgres.sh
BIN          := bin/usersync
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -s -w -X github.com/usersync/usersync/cmd/usersync/cli.version=$(VERSION)
GOLANGCI     := v2.15.0
GOVULNCHECK  := v1.9.0
TOOLS        := $(CURDIR)/.dev/tools
# The race detector costs 5-10x; these packages are cheap enough to run under it.
RACE_PKGS    := ./...
# Built with the usersync_poison tag, a released response body is overwritten at once: these
# packages' tests then fail if a row outlives its page (sync/jsonapi/poison_on.go).
POISON_PKGS  := ./sync/jsonapi ./sync/syncer
# Fuzz targets: package and name. make test runs each for a count of inputs (FUZZTIME=5000x,
# 1 to 4 s each here): with a duration, Go 1.26's fuzzing coordinator can fail a target with
# "context deadline exceeded" as the time runs out, with no failing input (golang/go#75804,
# fixed in Go 1.27); a count has no deadline to race. make fuzz runs each for FUZZTIME.
FUZZ_TARGETS := ./sync/jsondoc:FuzzDecodeDocument ./sync/normalize:FuzzTypeAttributes ./sync/normalize:FuzzCanonicalJSON ./sync/normalize:FuzzDecodePage ./jobs/fleet/config:FuzzLoadConfig ./jobs:FuzzParseSchedule ./sync/jsonapi:FuzzDecodeErrorBody ./sync/jsonapi:FuzzDecodeTokenResponse ./sync/jsonapi:FuzzCheckLink
FUZZTIME     ?= 60s
# make test builds with the duckdb tag (cgo and go-duckdb's bundled library): the DuckDB tests of
# sync/snapshot and cmd/usersync/cli read the snapshots and the dbt-duckdb sources as analysts do.
# make test's parallelism: two test binaries at once (deploy/dev/gotest.sh) and TEST_PARALLEL
# parallel tests in each. Two (Go's default on two cores): more finish sooner on an idle machine
# but stretch the tests that measure gaps of seconds past their slack on a busy one.
TEST_PARALLEL ?= 2
# -w leaves DWARF out of the test binaries: linking the DuckDB-tagged ones (go-duckdb's bundled
# static library) takes half the time; stack traces and goleak do not need it.
TEST_FLAGS   := -short -count=1 -timeout 20m -parallel $(TEST_PARALLEL) -ldflags=-w
# Dataset sizes of make bench (comma-separated).
BENCH_USERS  ?= 10000,100000,1000000

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z][a-zA-Z_-]*:.*## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/usersync (static, version-stamped)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/usersync

.PHONY: test
test: promtool node cc ## the fast loop: go vet, go test -short (every behaviour test; the long runs are make ci-long's) and DuckDB over the snapshots, against a throwaway PostgreSQL
	@export DATABASE_URL="$$($(PG) up)"; \
	$(GO) vet ./... && \
	CGO_ENABLED=1 GO=$(GO) deploy/dev/gotest.sh $(TEST_FLAGS) -tags duckdb

.PHONY: ci-long
ci-long: promtool node ## the long runs CI adds after make test: every test under the race detector (chaos, soak, scale and the demo included), the sync under the usersync_poison tag, and every fuzz target
	@export DATABASE_URL="$$($(PG) up)"; \
	$(GO) test -race -timeout 40m -count=1 $(RACE_PKGS) && \
	$(GO) test -tags usersync_poison -timeout 20m -count=1 $(POISON_PKGS) && \
	$(MAKE) --no-print-directory fuzz FUZZTIME=5000x

.PHONY: promtool
promtool: ## install promtool (Debian's prometheus package) when missing: make test runs the alert rules' unit tests with it
	@# The package's service is stopped again if its installation started it: only promtool is wanted.
	@if ! command -v promtool >/dev/null; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "promtool: installing prometheus (apt-get) to unit-test the alert rules"; \
		$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; \
		$$sudo systemctl disable --now prometheus >/dev/null 2>&1 || $$sudo service prometheus stop >/dev/null 2>&1 || true; \
	fi
	@promtool --version 2>&1 | head -1

# Said before a demo's build when there is no binary yet: the first build compiles Go's standard
# library and every dependency (Arrow's Parquet writer is half of it; docs/benchmarks.md, "The
# first build"), which took 3 m 42 s on two cores with nothing to say it was not stuck.
FIRST_BUILD := compiling $(BIN) first: the first build compiles Go's standard library and every dependency, 3 to 4 minutes on two cores (seconds once Go's build cache has them)

.PHONY: demo
demo: ## end to end: throwaway PostgreSQL, simulated API, full and incremental sync, example queries
	@[ -x $(BIN) ] || echo "demo: $(FIRST_BUILD)"
	@$(MAKE) --no-print-directory build
	@deploy/dev/demo.sh

.PHONY: demo-worker
demo-worker: ## the daemon: a worker syncing a changing simulated API every 10s, with live status
	@[ -x $(BIN) ] || echo "demo-worker: $(FIRST_BUILD)"
	@$(MAKE) --no-print-directory build
	@deploy/dev/demo-worker.sh

.PHONY: cc
cc: ## install a C and C++ compiler (Debian's g++) when missing: make test builds go-duckdb's bundled DuckDB with cgo
	@if ! command -v g++ >/dev/null || ! command -v gcc >/dev/null; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "cc: installing g++ (apt-get) to build DuckDB for its tests"; \
		$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc g++ libc6-dev; \
	fi

.PHONY: node
node: ## install node and npm (Debian's nodejs and npm) when missing: DuckDB runs on them, in make test (the analysts' examples) and make bench
	@# The DuckDB package itself is pinned in bench/duckdb/package-lock.json; the tests and the bench
	@# install it with npm ci into bench/duckdb/node_modules on first use.
	@missing=""; command -v node >/dev/null || missing=" nodejs"; command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "node: installing$$missing (apt-get) to run DuckDB"; \
		$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

.PHONY: bench
bench: node ## measure limits, backfill, incremental, reconcile and snapshot (beside DuckDB) at 10k, 100k and 1M users (BENCH_USERS to change, BENCH_ARGS for more flags)
	$(GO) run ./bench -users $(BENCH_USERS) $(BENCH_ARGS)

.PHONY: bench-fleet
bench-fleet: ## a worker of 11 accounts with nothing changing (syncs @every 2s), measured per kind of job and per sync run (FLEET_ARGS for more flags; docs/sizing.md)
	$(GO) run ./bench -fleet $(FLEET_ARGS)

.PHONY: chaos
chaos: ## fault injection: 30 faults (20 kill -9) with seed 1, then with three random seeds (CHAOS_ARGS to change)
	@for seed in 1 0 0 0; do \
		$(GO) run ./cmd/usersync-chaos -seed $$seed -faults 30 -kills 20 $(CHAOS_ARGS) || exit 1; \
	done

.PHONY: soak
soak: ## weeks of operation in minutes: two replicas for 10 minutes (SOAK_ARGS to change), then checks that fail when their rule is broken, and a line of figures
	$(GO) run ./cmd/usersync-chaos -seed 1 -soak 10m $(SOAK_ARGS)

.PHONY: scale
scale: ## many accounts, one fleet: 500 accounts of 2,000 users and 3 of 100,000 on two replicas with faults, a revoked token and rolling restarts; prints a table of figures and checks every account (SCALE_ARGS to change)
	$(GO) run ./cmd/usersync-chaos -seed 1 -scale -accounts 500 -account-users 2000 -large 3 -large-users 100000 -replicas 2 -faulty 10 -revoked 2 $(SCALE_ARGS)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 60s; make test runs 5000 inputs each)
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzzing $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

.PHONY: lint
lint: ## gofmt, go vet and golangci-lint (installed into .dev/tools on first use)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@test -x $(TOOLS)/golangci-lint || GOBIN=$(TOOLS) GOFLAGS= $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI)
	$(TOOLS)/golangci-lint run ./...
	@$(MAKE) --no-print-directory vulncheck

.PHONY: vulncheck
vulncheck: ## govulncheck (installed into .dev/tools); needs vuln.go.dev, and says so when it cannot reach it
	@test -x $(TOOLS)/govulncheck || GOBIN=$(TOOLS) GOFLAGS= $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK)
	@if curl -fsS -m 10 -o /dev/null https://vuln.go.dev/index/db.json 2>/dev/null; then \
		$(TOOLS)/govulncheck ./...; \
	else \
		echo "vulncheck: vuln.go.dev is unreachable from this machine; govulncheck was not run (the dependencies are pinned in go.mod)"; \
	fi

.PHONY: docs
docs: ## regenerate docs/configuration.md and docs/analysts.md's table reference
	$(GO) test ./cmd/usersync/cli -run 'TestDocs' -count=1 -update
	$(GO) test ./deploy -run TestEnvExample -count=1 -update

.PHONY: db-up
db-up: ## start (or reuse) the throwaway PostgreSQL and print its URL
	@$(PG) up

.PHONY: db-down
db-down: ## stop the throwaway PostgreSQL started by db-up, test or demo
	@$(PG) down

.PHONY: clean
clean: ## remove build output (keeps the throwaway database; see db-down)
	rm -rf bin

# flemma — `make demo` shows it working, `make test` runs every test.
GO      ?= go
BIN     := bin/flemma-host
NVIMS    = $(shell scripts/provision-nvim.sh | paste -sd: -)

.PHONY: all build dist test unit e2e bench bench-check chaos lint demo nvim fuzz check-go clean

all: build

check-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "make: Go is required (https://go.dev/dl, 1.25 or newer); it was not found on PATH" >&2; exit 1; }

# Static (no cgo), as the release's hosts (scripts/dist.sh): libc's pages
# and cgo's threads cost the host ~1.3 MB resident (docs/benchmarks.md).
build: check-go
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/flemma-host

# The prebuilt hosts of a release, with SHA256SUMS, in dist/
# (scripts/dist.sh; .github/workflows/release.yml publishes them).
dist: check-go
	GO=$(GO) scripts/dist.sh

# Neovim 0.7.2 (apt) and 0.10.4 (unpacked from Debian trixie into .cache/),
# bubblewrap and ripgrep (apt), gopls (go install, into .cache/) for the
# editor tools' tests.
nvim:
	@scripts/provision-nvim.sh >/dev/null
	@scripts/provision-tools.sh
	@scripts/provision-gopls.sh >/dev/null

lint: check-go
	@scripts/lint-actions.sh
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:" $$out >&2; exit 1; fi
	$(GO) vet ./...
	@scripts/lint-go.sh
	@scripts/lint-lua.sh
	@scripts/lint-doc.sh

# Every test: unit, golden, fuzz seed corpora, and the end-to-end tests against
# every provisioned Neovim. With CI set, a missing Neovim fails the run.
# -timeout: the end-to-end tests take 10–15 minutes under -race on a shared
# 2-core machine (faults and chaos included), past go test's default 10.
test: check-go lint nvim
	FLEMMA_NVIM="$(NVIMS)" $(GO) test -count=1 -race -timeout 30m ./...

unit: check-go
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /e2e)

e2e: check-go nvim
	FLEMMA_NVIM="$(NVIMS)" $(GO) test -count=1 -timeout 30m -v ./e2e/

bench: check-go nvim
	FLEMMA_NVIM="$(NVIMS)" $(GO) test -run '^$$' -bench . -benchmem ./...

# The budgeted benchmarks (docs/budgets.txt), each figure against its budget
# (✓/✗); exits non-zero when one is not met. Timing: not part of `make test`.
bench-check: check-go nvim
	FLEMMA_NVIM="$(NVIMS)" $(GO) run ./internal/benchcheck -budgets docs/budgets.txt $(if $(BENCHTIME),-benchtime $(BENCHTIME))

# Faults at random moments while tools run, CHAOS_ITERATIONS times per
# Neovim (make test runs one of each): the host killed, restarted, hung
# (SIGSTOP, with setup() and :checkhealth), started on a full disk (a tiny
# tmpfs when mount works: root) or on a corrupt journal. No call runs
# twice, no text is lost, the buffer is never left locked, the next press
# works, the user is told; the counts per fault are printed at the end.
CHAOS_ITERATIONS ?= 200
chaos: check-go nvim
	FLEMMA_NVIM="$(NVIMS)" FLEMMA_CHAOS_ITERATIONS=$(CHAOS_ITERATIONS) $(GO) test -count=1 -timeout 120m -v -run '^TestChaos$$' ./e2e/

fuzz: check-go
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./buffer/

demo: build nvim
	@$(GO) run ./cmd/flemma-demo

clean:
	rm -rf bin dist

# aepforms: `make test` is the README's test command and what CI runs.
GO ?= go
PKGS ?= ./...
# -race needs cgo and a C compiler.
RACE := $(shell if [ "$$($(GO) env CGO_ENABLED)" = "1" ] && command -v "$$($(GO) env CC)" >/dev/null 2>&1; then echo -race; fi)
# Fuzz budgets are counts, not durations: with a duration, Go 1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" when a
# worker is mid-input at the deadline on a loaded machine (golang/go#75804,
# fixed in Go 1.27). A count has no deadline to race.
FUZZTIME ?= 40000x

.PHONY: all generate build lint test fuzz run bench bench-smoke

all: generate lint test

generate:
	$(GO) tool templ generate -path components

build:
	$(GO) build -o bin/aepforms ./cmd/aepforms

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if ls components/*.templ >/dev/null 2>&1; then \
	  tmp=$$(mktemp -d); cp -r components "$$tmp/"; \
	  $(GO) tool templ generate -path "$$tmp/components" >/dev/null 2>&1; \
	  for f in components/*_templ.go; do \
	    cmp -s "$$f" "$$tmp/$$f" || { echo "generated code is stale: $$f (run make generate)"; rm -rf "$$tmp"; exit 1; }; \
	  done; rm -rf "$$tmp"; fi
	@echo "lint: ok"

test: lint
	@if [ -n "$(RACE)" ]; then echo "test: with the race detector (cgo and a C compiler found)"; \
	  else echo "test: without the race detector (no cgo or no C compiler)"; fi
	$(GO) test $(RACE) -count=1 -timeout 25m $(PKGS)
	@echo "test: the relay suite again, on a three-node in-process NATS JetStream cluster"
	AEPFORMS_TEST_RELAY_NATS=1 $(GO) test $(RACE) -count=1 ./internal/relay/
	$(MAKE) --no-print-directory bench-smoke
	$(MAKE) --no-print-directory fuzz

# Short fuzz smoke runs, one target at a time (go test -fuzz takes one).
fuzz:
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$t/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "fuzz: $$t $$f ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$t || exit 1; \
	  done; done

run:
	$(GO) run ./cmd/aepforms serve --demo

# Every benchmark at its default benchtime (docs/PERFORMANCE.md has the
# command behind each published figure).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

# Every benchmark once, trimmed to small sizes (-short), without the race
# detector: fails when a benchmark no longer runs, so none rots between
# measurements. Its figures are not measurements.
bench-smoke:
	$(GO) test -run='^$$' -bench=. -benchtime=1x -short $(PKGS)

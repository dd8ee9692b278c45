# kvtwin — `make run` serves the catalog on 127.0.0.1:8080; `make test` is everything CI runs.
GO       ?= go
BIN      := bin/kvtwin
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')
FIXTURES  = $(wildcard fixtures/testdata/*.jsonl)

.PHONY: all build run test test-long fmt-check vet staticcheck test-race fixtures-check audit-short \
        fixtures bugzoo audit bench fuzz lint clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/kvtwin

## run: the HTTP server on 127.0.0.1:8080, CPU fast path, embedded defaults.
run: build
	$(BIN) serve

## test: every gate CI runs, on a fresh clone, in under 10 minutes on 2 cores.
test: fmt-check vet staticcheck test-race fixtures-check audit-short

## test-long: the exhaustive checks too slow for every CI run (all 2^32 float32 inputs through the
## e4m3 and bf16 codecs against independent oracles: about 30 s on 2 cores).
test-long:
	KVTWIN_LONG=1 $(GO) test -count=1 -timeout 60m -run TestCodecsAgreeWithOraclesOnEveryFloat32 ./ref/

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck is pinned by go.mod's tool directive and run with `go run`.
staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck ./...

test-race:
	$(GO) test -race -count=1 ./...

fixtures-check: build
	$(BIN) fixtures check --impl fast $(FIXTURES)
	$(BIN) fixtures check --impl ref $(FIXTURES)

audit-short: build
	$(BIN) audit --cases 100 --no-progress

lint: fmt-check vet staticcheck

## fixtures: regenerate the golden set from ref (a no-op unless generators or ref changed).
fixtures:
	$(GO) run ./cmd/kvtwin fixtures gen --dir fixtures/testdata

## bugzoo: regenerate docs/bugzoo.md from the suite.
bugzoo:
	$(GO) run ./cmd/kvtwin bugzoo > docs/bugzoo.md.tmp && mv docs/bugzoo.md.tmp docs/bugzoo.md

## audit: the full differential audit (200 cases per op × implementation, plus the bug zoo).
audit: build
	$(BIN) audit

## bench: Go benchmarks of every op shape, with fast/ref and plain-copy ratios, then the radix
## tree, prefix-pool, trace-replay and HiCache benchmarks (docs/perf.md records both).
GO_BENCH ?= MatchFullHit|PrefixLen240K|InsertRewalk|Bigram64K|Score240K|ReplayBlocks|OwnerCounts64K|OwnerPlan10K|HasUndrained|LoadDescriptorBuild|LoadSubmitLayer|CounterWaitLanded|CounterLoadOp|EstimateTotalWith|EstimateBatch64|AdmissionRound1000|Preflight32K|PreflightHandler|PerLayerForwardGLM5|OnLayerEnd|Move(Monolithic|PerLayer)256MiB
bench: build
	$(BIN) bench
	$(GO) test -run '^$$' -bench '$(GO_BENCH)' -benchmem -count 1 ./fast/ ./prefix/ ./replay/ ./server/

clean:
	rm -rf bin

## fuzz: explore arbitrary inputs on every op (no panic, twins agree); FUZZTIME=5m for longer.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRunNeverPanicsAndTwinsAgree -fuzztime $(FUZZTIME) ./catalog/

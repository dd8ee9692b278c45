# kvtwin — `make run` serves the catalog on 127.0.0.1:8080; `make test` is everything CI runs.
GO       ?= go
# make test fails, not skips, when /usr/bin/python3 lacks zmq or msgpack, as CI
# does (events/pypub); `make test KVTWIN_REQUIRE_PYZMQ=` skips those tests instead.
KVTWIN_REQUIRE_PYZMQ ?= 1
export KVTWIN_REQUIRE_PYZMQ
BIN      := bin/kvtwin
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')
FIXTURES  = $(wildcard fixtures/testdata/*.jsonl)

.PHONY: all build run test quick test-long fmt-check vet staticcheck test-race test-full test-edges test-cli test-addop hostile-short hostile fixtures-check audit-short \
        test-e2e test-python coverage fixtures bugzoo generate docs audit bench bench-compare bench-chart soak fuzz lint clean \
        cuda-deps ptx ptx-check emu cuda-build test-cuda gpu-bin gpu-check

all: build

build:
	$(GO) build -o $(BIN) ./cmd/kvtwin

## run: the HTTP server on 127.0.0.1:8080, CPU fast path, embedded defaults; RUN_ARGS adds serve
## flags, e.g. make run RUN_ARGS='--events vllm-0=tcp://127.0.0.1:5557,replay=tcp://127.0.0.1:5558'.
run: build
	$(BIN) serve $(RUN_ARGS)

## test: every gate CI runs, on a fresh clone; under 8 minutes on an idle 2-core machine with warm
## caches (issue 28). No target repeats another's work: test-race runs every package under -race;
## test-full reruns at full size what -race shrinks (equiv's rapid checks, the JetStream acceptance
## test); test-cli runs exactly the tests that skip under -race; test-addop and test-cuda build
## apart (a copy of the tree; -tags cuda).
test: fmt-check vet staticcheck test-race test-full test-cli test-addop test-python fixtures-check audit-short test-cuda

## test-e2e: the CLI's end-to-end audits through subprocess adapters that skip under -race (a broken
## Go adapter, fixtures over exec, sharded runs merged): they re-execute the test binary as
## adapters, so they run here without -race. The other audits through subprocesses (the Python kit's
## example, adapter check, kvtwin serve over HTTP) run under -race in test-race and not again.
E2E_TESTS := ^(TestVerifyReportsEveryBugZooFaultOnTheFixtureCorpus|TestAuditOfABrokenAdapterReportsSeedFixtureDiffAndMinimalCase|TestFixturesCheckReplaysOverExec|TestShardReportsMergeIntoTheVerdictOfAnUnshardedRun)$$
test-e2e:
	$(GO) test -count=1 -run '$(E2E_TESTS)' ./cmd/kvtwin/

## test-python: the Python adapter kit's own tests (standard library only; adapters/python).
test-python:
	cd adapters/python && python3 -m unittest

## test-long: the exhaustive checks too slow for every CI run (all 2^32 float32 inputs through the
## e4m3 and bf16 codecs against independent oracles: about 30 s on 2 cores).
test-long:
	KVTWIN_LONG=1 $(GO) test -count=1 -timeout 60m -run TestCodecsAgreeWithOraclesOnEveryFloat32 ./ref/

## quick: the edit loop's check (scripts/quick.sh): gofmt of the changed Go files, then go vet and
## go test -short, without -race, of the packages changed: with uncommitted changes, the work tree
## against the merge-base with main (QUICK_BASE=<branch> for another), with a clean tree HEAD's last
## commit. Under 90 s for a one-package change on 2 cores; make test is still the gate.
quick:
	GO=$(GO) sh scripts/quick.sh

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck is pinned by go.mod's tool directive and run with `go run`.
staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck ./...

# test-race skips what another target runs without -race (ADDOP_TEST: test-addop; NORACE_PKGS:
# test-full).
test-race:
	$(GO) test -race -count=1 -skip '$(ADDOP_TEST)' $$($(GO) list ./... | grep -v -x -F $(foreach p,$(NORACE_PKGS),-e $(p)))

## test-addop: docs/adding-an-op.md's recipe, followed in a copy of the repository: its trivial op
## written file by file as the page shows it, make generate fixtures bugzoo run, the module built and
## vetted, the op's gates passed, and the files written by hand counted against the page's count and
## table (internal/repolint). About 20 s with a warm build cache (the copy sits in one directory
## per checkout, so runs share its compiles, and builds with make test's flags, so it reuses the
## standard library and dependencies test-full and test-cli compiled). -race would add nothing: the
## work is in the child commands.
ADDOP_TEST := ^TestAddingAnOpTakesTheFilesTheDocCounts$$
test-addop:
	$(GO) test -count=1 -run '$(ADDOP_TEST)' ./internal/repolint/

## test-full: what test-race runs smaller, at full size without -race: the differential suite
## (equiv, which under -race runs a fifth of rapid's checks; it includes hostile-short's harness)
## and the 100,000-event JetStream acceptance test (20,000 under -race); and the packages whose
## tests start no goroutine and drive no concurrent path that equiv's race run does not
## (NORACE_PKGS), which test-race leaves out: the docs generator's staleness tests (they only
## type-check the module: 67 s under -race, 10 s without), the mutants (25 s under -race, 8 s
## without: each plant is killed by the same sequential suites), the trace generator (13 s, 1 s),
## the catalog's per-entry checks (10 s, 2 s) and the golden fixtures' replays (7 s, 1 s).
NORACE_PKGS := github.com/kvtwin/kvtwin/internal/gen/docs github.com/kvtwin/kvtwin/equiv/mutants \
	github.com/kvtwin/kvtwin/events/tracegen github.com/kvtwin/kvtwin/catalog github.com/kvtwin/kvtwin/fixtures
## HEAP_TESTS: the prefix pools' heap measurements, which skip under -race (23 s there, the churn
## test quadratic by design).
HEAP_TESTS := ^(TestChurnNeverHoldsMoreThanTheReservation|TestBytesPerTokenAndNodeBoundTheMeasuredHeap)$$
test-full:
	$(GO) test -count=1 ./equiv/ $(NORACE_PKGS)
	$(GO) test -count=1 -run '$(HEAP_TESTS)' ./prefix/
	$(GO) test -count=1 -run 'TestReplicasConverge' ./events/scaleout/

## test-edges: the surfaces that face other people's systems, each bound measured on a real child
## process (docs/reliability.md): the event wire (a real python3-zmq publisher), the write path
## (slow readers), adapters (hostile exec and HTTP adapters) and files (/dev/zero, FIFOs, huge
## lines). They measure RSS and time, so they run here without -race and skip under it; the
## hostile files that measure nothing (lying audit reports, malformed files: TestHostileFile…) run
## under -race in test-race. KVTWIN_HOSTILE=long (make hostile) runs all their long forms.
EDGE_TESTS := ^(TestEdge|TestHostile(Publisher|Adapter))
test-edges:
	$(GO) test -count=1 -run '$(EDGE_TESTS)' ./cmd/kvtwin/

## test-cli: test-edges and test-e2e in one test binary (make test runs this): exactly cmd/kvtwin's
## tests that skip under -race, which internal/repolint's TestTestsSkippedUnderRaceRunOnceWithoutIt
## holds EDGE_TESTS and E2E_TESTS to (a test in neither would run nowhere, one in both twice).
test-cli:
	$(GO) test -count=1 -run '$(EDGE_TESTS)|$(E2E_TESTS)' ./cmd/kvtwin/

## hostile-short: the hostile-input harness (equiv/hostile_test.go) on every op × implementation,
## bounded form; it measures time and allocation, so it runs without -race (docs/reliability.md).
hostile-short:
	$(GO) test -count=1 -run 'TestHostileInputs' ./equiv/

## hostile: everything hostile, long: the op harness (more golden seeds, arrays grown to 1 MiB,
## nesting to 512), then the edges' long forms: 40 slow readers of 45 MB answers, a 2 GiB stderr
## flood and 8 GiB replies from adapters, a 16 GiB line and every command on every hostile file,
## 40 rounds of malformed messages, a 500K-message flood and a 21 s endless replay from publishers.
HOSTILE_TESTS := ^(TestEdge|TestHostile(Publisher|Adapter|File))
hostile:
	KVTWIN_HOSTILE=long $(GO) test -count=1 -timeout 60m -v -run 'TestHostileInputs' ./equiv/
	KVTWIN_HOSTILE=long $(GO) test -count=1 -timeout 60m -v -run '$(HOSTILE_TESTS)' ./cmd/kvtwin/

fixtures-check: build
	$(BIN) fixtures check --impl fast $(FIXTURES)
	$(BIN) fixtures check --impl ref $(FIXTURES)

audit-short: build
	$(BIN) audit --cases 100 --no-progress

lint: fmt-check vet staticcheck

## fixtures: regenerate the golden set from ref (a no-op unless generators or ref changed), then the
## docs that list the fixture files.
fixtures:
	$(GO) run ./cmd/kvtwin fixtures gen --dir fixtures/testdata
	$(MAKE) docs

## generate: regenerate the registration lists from the source (catalog/all_gen.go, equiv/suites_gen.go,
## equiv/mutants/all_gen.go: internal/gen), then the docs generated from them. Run after adding, renaming or
## removing an op, a spec or a mutant; TestGeneratedListsAreCurrent fails until you do.
generate:
	$(GO) run ./internal/gen
	$(MAKE) docs

## docs: regenerate docs/ops.md and README.md's ops table from the catalog and the source,
## docs/design/ARCHITECTURE.md's package graph, package table and import rules from `go list`, the
## package doc comments and internal/importgraph's rules, and docs/errors.md (every error ref can
## return, per op) from the source of ref, spec and catalog (internal/gen/docs); TestOpsPageIsCurrent,
## TestReadmeOpsTableIsCurrent, TestArchitecturePageIsCurrent and TestErrorsPageIsCurrent fail until
## you do.
docs:
	$(GO) run ./internal/gen/docs

## coverage: statement coverage of spec/, ref/ and fast/ by the differential suite alone
## (./equiv/...), per file and per function, each unreached function with its reason from
## docs/coverage.md (internal/coverreport); fails under 97 % while a function lacks a reason.
## rapid's seed is fixed (COVER_SEED) so the report is the same on every run.
COVER_SEED ?= 1
coverage:
	$(GO) test -count=1 -coverpkg=./spec,./ref,./fast -coverprofile=cover.out ./equiv/... -args -rapid.seed=$(COVER_SEED)
	$(GO) run ./internal/coverreport -profile cover.out -reasons docs/coverage.md

## bugzoo: regenerate docs/bugzoo.md from the suite.
bugzoo:
	$(GO) run ./cmd/kvtwin bugzoo > docs/bugzoo.md.tmp && mv docs/bugzoo.md.tmp docs/bugzoo.md

## audit: the full differential audit (200 cases per op × implementation, plus the bug zoo).
audit: build
	$(BIN) audit

## bench: Go benchmarks of every op shape, with fast/ref and plain-copy ratios, then the radix
## tree, prefix-pool, trace-replay and HiCache benchmarks (docs/perf.md records both). Both are
## also kept in docs/bench/DATE-COMMIT[-dirty].json and the history chart is redrawn (bench-chart).
GO_BENCH ?= MatchFullHit|PrefixLen240K|KVEvApplyStored|DecodeTokensJSON|TokenStreamFeed240K|Hash512|InsertRewalk|Bigram64K|Score240K|ReplayBlocks|OwnerCounts64K|OwnerPlan10K|HasUndrained|LoadDescriptorBuild|LoadSubmitLayer|CounterWaitLanded|CounterLoadOp|EstimateTotalWith|EstimateBatch64|AdmissionRound1000|Preflight32K|PreflightHandler|PerLayerForwardGLM5|OnLayerEnd|Move(Copy|Monolithic|PerLayer)256MiB|AdmissionBenchTrace
BENCH_PKGS := ./fast/ ./prefix/ ./replay/ ./admissiontrace/ ./server/
BENCH_RECORD_COUNT ?= 1
bench: build
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	echo "$(BIN) bench --json"; \
	$(BIN) bench --json > "$$tmp/catalog.json"; \
	echo "$(GO) test -run '^\$$' -bench '$(GO_BENCH)' -benchmem -count $(BENCH_RECORD_COUNT) $(BENCH_PKGS)"; \
	{ $(GO) test -run '^$$' -bench '$(GO_BENCH)' -benchmem -count $(BENCH_RECORD_COUNT) $(BENCH_PKGS); echo $$? > "$$tmp/rc"; } \
		| $(BIN) bench record --catalog "$$tmp/catalog.json" --table --tee --dir docs/bench; \
	test "$$(cat "$$tmp/rc")" = 0
	$(BIN) bench chart --dir docs/bench --out docs/img/bench-history.svg

## bench-chart: redraw docs/img/bench-history.svg (headline ratios per run) from docs/bench/*.json.
bench-chart: build
	$(BIN) bench chart --dir docs/bench --out docs/img/bench-history.svg

## bench-compare: benchstat of OLD against NEW, each a docs/bench record or a commit (benchmarked
## in a temporary git worktree, BENCH_COUNT runs of GO_BENCH): make bench-compare OLD=v1 NEW=HEAD.
BENCH_COUNT ?= 6
BENCHTIME ?= 1s
bench-compare: build
	@test -n "$(OLD)" && test -n "$(NEW)" || { echo "usage: make bench-compare OLD=<record.json|commit> NEW=<record.json|commit>" >&2; exit 2; }
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(call bench_text,$(OLD),$$tmp/old.txt); \
	$(call bench_text,$(NEW),$$tmp/new.txt); \
	$(GO) tool benchstat old="$$tmp/old.txt" new="$$tmp/new.txt"

# bench_text writes the benchstat text of $(1) to $(2): `kvtwin bench text` of a record file, or
# go test -bench of a commit checked out (detached) in a temporary worktree, removed afterwards.
define bench_text
if [ -f "$(1)" ]; then $(BIN) bench text "$(1)" > "$(2)"; else \
	rev=$$(git rev-parse --verify --quiet "$(1)^{commit}") || { echo "bench-compare: $(1) is neither a file nor a commit" >&2; exit 2; }; \
	wt=$$(mktemp -d); echo "bench-compare: $(1) ($$rev) in $$wt" >&2; \
	git worktree add --detach --quiet "$$wt/src" "$$rev"; \
	pkgs=$$(cd "$$wt/src" && for p in $(BENCH_PKGS); do if [ -d "$$p" ]; then echo "$$p"; fi; done); \
	rc=0; [ -n "$$pkgs" ] || { echo "bench-compare: none of $(BENCH_PKGS) exists at $(1)" > "$(2)"; rc=2; }; \
	[ $$rc != 0 ] || (cd "$$wt/src" && $(GO) test -run '^$$' -bench '$(GO_BENCH)' -benchmem -benchtime $(BENCHTIME) -count $(BENCH_COUNT) $$pkgs) > "$(2)" || rc=$$?; \
	git worktree remove --force "$$wt/src"; rm -rf "$$wt"; \
	[ $$rc = 0 ] || { echo "bench-compare: go test -bench failed at $(1)" >&2; cat "$(2)" >&2; exit $$rc; }; \
fi
endef

## soak: `kvtwin soak` — `kvtwin serve` as a child on 127.0.0.1 for SOAKTIME under well-behaved and
## hostile HTTP clients, its event-fed index fed by three real KV-event publishers (churn over 4 DP
## ranks, pinned prompts whose scores the clients check, hostile messages; /usr/bin/python3 with
## python3-zmq and python3-msgpack), and `kvtwin audit` of the Python kit's example adapter run again
## and again beside them. Fails on any 5xx, a crash, RSS past its bounds, a 429 storm, transport
## errors, a wrong score, an index that stopped applying, a publisher that could not run or a failed
## audit run. SOAK_ARGS adds flags, e.g. SOAK_ARGS='--events=false --audit=false' (HTTP only).
SOAKTIME ?= 60s
soak: build
	$(BIN) soak --duration $(SOAKTIME) $(SOAK_ARGS)

clean:
	rm -rf bin

## fuzz: explore arbitrary inputs on every op (no panic, twins agree); FUZZTIME=5m for longer.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRunNeverPanicsAndTwinsAgree -fuzztime $(FUZZTIME) ./catalog/

## ---- CUDA path (docs/gpu.md). Plain `go build ./...` / `go test ./...` need none of this. ----
# The toolchain is unpacked (not installed) by scripts/cuda-setup.sh into a per-user cache
# shared by every checkout; nvcc 11.8 with the system g++-12 (shared/design/cuda.md).
CUDA_ROOT ?= $(HOME)/.cache/kvtwin/cuda-11.8
NVCC      ?= $(CUDA_ROOT)/usr/lib/nvidia-cuda-toolkit/bin/nvcc
PTXAS     ?= $(CUDA_ROOT)/usr/bin/ptxas
# IEEE-faithful device arithmetic (no FMA contraction, IEEE division and square root, no
# flush-to-zero), so the kernels are bit-exact with ref; no -lineinfo (it embeds paths).
NVCCFLAGS ?= -ccbin g++-12 -allow-unsupported-compiler -std=c++17 -O3 -arch=compute_90 \
             -fmad=false -prec-div=true -prec-sqrt=true -ftz=false
# The host build of the same kernels for the emulation driver: no FMA contraction, no fast math.
EMU_FLAGS ?= -O2 -fPIC -ffp-contract=off -fno-fast-math -Wall -Wextra
CUDA_ENV   = CGO_ENABLED=1 CGO_CFLAGS="-I$(CUDA_ROOT)/usr/include" \
             CGO_LDFLAGS="-L$(CUDA_ROOT)/usr/lib/x86_64-linux-gnu/stubs"
KERNELS_CU = $(wildcard fast/cuda/kernels/*.cu)
KERNELS_PTX = $(KERNELS_CU:.cu=.ptx)
EMU_DIR   := .cache/emu

## cuda-deps: unpack the CUDA 11.8 headers, link stub and nvcc into $(CUDA_ROOT) (idempotent;
## fails loudly when the fetch fails).
cuda-deps:
	CUDA_ROOT=$(CUDA_ROOT) sh scripts/cuda-setup.sh

## ptx: regenerate fast/cuda/kernels/<base>.ptx from each <base>.cu (committed; go:embed).
ptx: cuda-deps
	@for cu in $(KERNELS_CU); do sh scripts/ptx.sh "$(NVCC)" "$$cu" "$${cu%.cu}.ptx" $(NVCCFLAGS) || exit 1; done

## ptx-check: the committed PTX equals a fresh build, and ptxas accepts it for sm_90.
ptx-check: cuda-deps
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	for cu in $(KERNELS_CU); do b=$$(basename "$${cu%.cu}"); \
	  sh scripts/ptx.sh "$(NVCC)" "$$cu" "$$tmp/$$b.ptx" $(NVCCFLAGS) || exit 1; \
	  cmp -s "$$tmp/$$b.ptx" "$${cu%.cu}.ptx" || { echo "ptx-check: $${cu%.cu}.ptx is stale: run make ptx"; exit 1; }; \
	  $(PTXAS) -arch=sm_90 "$${cu%.cu}.ptx" -o /dev/null || exit 1; \
	done; echo "ptx-check: $(words $(KERNELS_CU)) module(s) match their source and assemble for sm_90"

## emu: the host emulation driver ($(EMU_DIR)/libcuda.so.1): fast/cuda/emu plus every kernel's host build.
emu: cuda-deps
	@mkdir -p $(EMU_DIR)/obj
	gcc -std=c11 $(EMU_FLAGS) -I$(CUDA_ROOT)/usr/include -c fast/cuda/emu/emu.c -o $(EMU_DIR)/obj/emu.o
	sh fast/cuda/emu/gen-stubs.sh $(CUDA_ROOT)/usr/include $(EMU_DIR)/obj/emu.o > $(EMU_DIR)/obj/stubs.c
	gcc -std=c11 -O2 -fPIC -c $(EMU_DIR)/obj/stubs.c -o $(EMU_DIR)/obj/stubs.o
	@for cu in $(KERNELS_CU); do b=$$(basename "$${cu%.cu}"); \
	  g++ -x c++ -std=c++17 $(EMU_FLAGS) -c "$$cu" -o $(EMU_DIR)/obj/k_$$b.o || exit 1; done
	g++ -shared -Wl,-soname,libcuda.so.1 -o $(EMU_DIR)/libcuda.so.1 $(EMU_DIR)/obj/*.o -ldl

## cuda-build: compile everything with -tags cuda (links against the CUDA link stub).
cuda-build: cuda-deps
	$(CUDA_ENV) $(GO) build -tags cuda ./...
	$(CUDA_ENV) $(GO) vet -tags cuda ./...

## test-cuda: the cuda-tagged suite; against the host emulation unless a real driver is installed.
test-cuda: cuda-deps emu ptx-check
	$(CUDA_ENV) EMU_DIR=$(EMU_DIR) sh scripts/cuda-test.sh

## gpu-bin: the cuda-tagged test and bench binaries for the GPU machine, in gpu-bin/ (ignored).
gpu-bin: cuda-deps
	@mkdir -p gpu-bin
	$(CUDA_ENV) $(GO) test -c -tags cuda -trimpath -ldflags="-s -w" -o gpu-bin/cuda.test ./fast/cuda
	$(CUDA_ENV) $(GO) test -c -tags cuda -trimpath -ldflags="-s -w" -o gpu-bin/equiv.test ./equiv
	$(CUDA_ENV) $(GO) test -c -tags cuda -trimpath -ldflags="-s -w" -o gpu-bin/server.test ./server
	cp scripts/gpu-check.sh gpu-bin/gpu-check.sh

## gpu-check: build gpu-bin/ and print the one command the GPU machine runs (docs/gpu.md).
gpu-check: gpu-bin
	@echo "gpu-check: ready. On the GPU machine (carry gpu-bin), run:"
	@echo "  sh gpu-bin/gpu-check.sh"

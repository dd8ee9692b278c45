package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestEngineModelKnownAnswer walks the engine model through a 2-block pool
// by hand: LRU victims, block token counts of evicted last blocks, and a
// prompt too large for the pool inserted only as far as it fits.
func TestEngineModelKnownAnswer(t *testing.T) {
	reqs := []Request{
		{Timestamp: 0, InputLength: 600, HashIDs: []spec.Unit{1, 2}},     // miss; pool [1 2]
		{Timestamp: 1, InputLength: 1000, HashIDs: []spec.Unit{1, 3}},    // hits 1; evicts [2] (88 tokens)
		{Timestamp: 2, InputLength: 600, HashIDs: []spec.Unit{1, 2}},     // hits 1; evicts [3] (488)
		{Timestamp: 3, InputLength: 1100, HashIDs: []spec.Unit{5, 6, 7}}, // misses; evicts [2], [1]; only [5 6] fit
	}
	rep, err := Run(reqs, Config{Mode: ModeBlocks, CapacityTokens: 2 * 512, NewTree: ref.NewRadixTree})
	if err != nil {
		t.Fatal(err)
	}
	want := Report{Mode: ModeBlocks, PageSize: 1, CapacityTokens: 1024, CapacityUnits: 2, Requests: 4,
		InputTokens: 3300, HitTokens: 1024, HitRate: 1024.0 / 3300,
		MatchBlockOps: 1 + 2 + 2 + 1, InsertBlockOps: 2 + 2 + 2 + 2, EvictBlockOps: 0 + 1 + 1 + 2, MixedBlockOps: 18,
		QueryBlockOps: 1 + 1 + 1 + 3, QueryHitTokens: 1024,
		Evictions: 4, EvictedTokens: 88 + 488 + 88 + 512, TruncatedInserts: 1, PeakUnits: 2, FinalUnits: 2}
	if diff := cmp.Diff(want, rep.Deterministic()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// modelKey is a node of the naive model: the page-aligned prefix that ends
// with page, under the prefix numbered parent (0 = empty).
type modelKey struct {
	parent int
	page   string
}

// modelHits is the naive model of an unlimited cache (docs/spec/radix-acks.md §1.9
// P1): the set of every page-aligned prefix of every earlier prompt. A
// request hits the longest run of its leading pages in the set — the
// longest page-aligned prefix it shares with any earlier request — counted
// in tokens, and then adds its own prefixes.
func modelHits(reqs []Request, mode Mode, ps int) int64 {
	set := map[modelKey]int{}
	var hits int64
	for _, req := range reqs {
		pages := modelPages(req, mode, ps)
		node, matched := 0, 0
		for ; matched < len(pages); matched++ {
			next, ok := set[modelKey{node, pages[matched]}]
			if !ok {
				break
			}
			node = next
		}
		if mode == ModeBlocks {
			hits += int64(min(matched*BlockTokens, req.InputLength))
		} else {
			hits += int64(matched * ps)
		}
		for _, p := range pages[matched:] {
			set[modelKey{node, p}] = len(set) + 1
			node = len(set)
		}
	}
	return hits
}

// modelPages is req's whole pages as strings: ps tokens each, or one hash
// id each in blocks mode.
func modelPages(req Request, mode Mode, ps int) []string {
	if mode == ModeBlocks {
		pages := make([]string, len(req.HashIDs))
		for i, id := range req.HashIDs {
			pages[i] = fmt.Sprint(id)
		}
		return pages
	}
	toks := AppendTokens(nil, req)
	pages := make([]string, len(toks)/ps)
	for i := range pages {
		b := make([]byte, 0, 8*ps)
		for _, u := range toks[i*ps : (i+1)*ps] {
			b = binary.LittleEndian.AppendUint64(b, u)
		}
		pages[i] = string(b)
	}
	return pages
}

// sampleFor is the sample, cut to its first 100 requests in tokens mode
// (1.4M tokens) to keep the race-enabled run of the package short.
func sampleFor(t *testing.T, mode Mode) []Request {
	reqs := readSample(t)
	if mode == ModeTokens {
		return reqs[:100]
	}
	return reqs
}

// The invariant tests below run on the production tree (fast, quick under
// -race); TestTreesAgreeOnTheDeterministicReport ties ref to it.

func TestUnlimitedReplayHitsTheLongestPrefixSharedWithAnEarlierRequest(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		ps   int
	}{{ModeBlocks, 1}, {ModeTokens, 64}, {ModeTokens, 100}} {
		t.Run(fmt.Sprintf("%s/page=%d", tc.mode, tc.ps), func(t *testing.T) {
			t.Parallel()
			reqs := sampleFor(t, tc.mode)
			rep, err := Run(reqs, Config{Mode: tc.mode, PageSize: tc.ps, NewTree: fast.NewRadixTree})
			if err != nil {
				t.Fatal(err)
			}
			if want := modelHits(reqs, tc.mode, tc.ps); rep.HitTokens != want {
				t.Errorf("hit tokens %d, the naive model says %d", rep.HitTokens, want)
			}
			if rep.HitTokens > rep.InputTokens || rep.HitTokens == 0 {
				t.Errorf("hit tokens %d of %d input tokens", rep.HitTokens, rep.InputTokens)
			}
			if rep.Evictions != 0 || rep.EvictedTokens != 0 || rep.TruncatedInserts != 0 {
				t.Errorf("an unlimited cache evicted %d nodes (%d tokens) and truncated %d inserts",
					rep.Evictions, rep.EvictedTokens, rep.TruncatedInserts)
			}
		})
	}
}

// TestFullTraceUnlimitedBlocksReplayMatchesTheModel checks the model
// identity on all 12,031 requests. It needs the full trace and the fast
// tree: the ref tree's full walks take over a minute there.
func TestFullTraceUnlimitedBlocksReplayMatchesTheModel(t *testing.T) {
	newTree, ok := trees["fast"]
	if !ok {
		t.Skip("needs fast.NewRadixTree, not in this build yet (the ref tree takes over a minute on the full trace)")
	}
	reqs := readFullOrSkip(t)
	rep, err := Run(reqs, Config{Mode: ModeBlocks, NewTree: newTree})
	if err != nil {
		t.Fatal(err)
	}
	if want := modelHits(reqs, ModeBlocks, 1); rep.HitTokens != want || rep.FinalUnits != 182790 {
		t.Errorf("hit tokens %d, final %d blocks; the naive model says %d tokens, and the trace has 182,790 distinct prefixes",
			rep.HitTokens, rep.FinalUnits, want)
	}
}

// sizeCheckedTree fails the test whenever the wrapped tree holds more than
// limit units after an insert or an eviction, counting by a full walk
// (TotalSize), not by the replay's own bookkeeping.
type sizeCheckedTree struct {
	spec.RadixTree
	t     *testing.T
	limit int
}

func (c sizeCheckedTree) check(op string) {
	if n := c.TotalSize(); n > c.limit {
		c.t.Fatalf("after %s the tree holds %d units, over the capacity of %d", op, n, c.limit)
	}
}

func (c sizeCheckedTree) Insert(k spec.RadixKey, v []spec.SlotIdx, p int) (int, error) {
	defer c.check("Insert")
	return c.RadixTree.Insert(k, v, p)
}

func (c sizeCheckedTree) Evict(n int) (spec.EvictResult, error) {
	defer c.check("Evict")
	return c.RadixTree.Evict(n)
}

func TestBoundedReplayNeverExceedsItsCapacity(t *testing.T) {
	for _, tc := range []struct {
		mode        Mode
		capacity    int
		ps, capUnit int
	}{{ModeBlocks, 64 << 10, 1, 512}, {ModeBlocks, 1 << 20, 1, 512}, {ModeTokens, 64 << 10, 64, 1}, {ModeTokens, 256 << 10, 100, 1}} {
		t.Run(fmt.Sprintf("%s/capacity=%d", tc.mode, tc.capacity), func(t *testing.T) {
			t.Parallel()
			reqs := sampleFor(t, tc.mode)
			limit := tc.capacity / tc.capUnit
			newTree := func(cfg spec.TreeConfig) (spec.RadixTree, error) {
				tree, err := fast.NewRadixTree(cfg)
				return sizeCheckedTree{tree, t, limit}, err
			}
			rep, err := Run(reqs, Config{Mode: tc.mode, PageSize: tc.ps, CapacityTokens: tc.capacity, NewTree: newTree})
			if err != nil {
				t.Fatal(err)
			}
			if rep.CapacityUnits != limit || rep.PeakUnits > limit || rep.FinalUnits > rep.PeakUnits {
				t.Errorf("capacity %d units, peak %d, final %d", rep.CapacityUnits, rep.PeakUnits, rep.FinalUnits)
			}
			if rep.HitTokens > rep.InputTokens || rep.Evictions == 0 || rep.EvictedTokens == 0 {
				t.Errorf("hit %d of %d tokens, %d evictions of %d tokens: a small cache must evict",
					rep.HitTokens, rep.InputTokens, rep.Evictions, rep.EvictedTokens)
			}
			if rep.MixedBlockOps != rep.MatchBlockOps+rep.InsertBlockOps+rep.EvictBlockOps {
				t.Errorf("mixed block ops %d != %d + %d + %d", rep.MixedBlockOps, rep.MatchBlockOps, rep.InsertBlockOps, rep.EvictBlockOps)
			}
		})
	}
}

func TestReportTimingIsTheOnlyNondeterministicPart(t *testing.T) {
	reqs := readSample(t)[:60]
	cfg := Config{Mode: ModeTokens, CapacityTokens: 256 << 10, NewTree: fast.NewRadixTree}
	a, errA := Run(reqs, cfg)
	b, errB := Run(reqs, cfg)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if diff := cmp.Diff(a.Deterministic(), b.Deterministic()); diff != "" {
		t.Errorf("two replays differ (-first +second):\n%s", diff)
	}
	tm := a.Timing
	if tm.QueryNs <= 0 || tm.MixedNs <= 0 || tm.MatchP50Ns <= 0 || tm.MatchP99Ns < tm.MatchP50Ns ||
		tm.QueryBlockOpsPerSec <= 0 || tm.MixedBlockOpsPerSec <= 0 {
		t.Errorf("timing %+v: every field should be measured", tm)
	}
}

// TestTreesAgreeOnTheDeterministicReport replays the sample on every tree
// in the build; the ref and fast trees must give identical reports.
func TestTreesAgreeOnTheDeterministicReport(t *testing.T) {
	if len(trees) < 2 {
		t.Skip("only the ref tree is in this build; fast.NewRadixTree has not landed")
	}
	for _, cfg := range []Config{{Mode: ModeBlocks, CapacityTokens: 64 << 10}, {Mode: ModeTokens, CapacityTokens: 256 << 10}} {
		reqs := sampleFor(t, cfg.Mode)
		cfg.NewTree = ref.NewRadixTree
		want, err := Run(reqs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for name, newTree := range trees {
			cfg.NewTree = newTree
			got, err := Run(reqs, cfg)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if diff := cmp.Diff(want.Deterministic(), got.Deterministic()); diff != "" {
				t.Errorf("%s %s replay differs from ref (-ref +%s):\n%s", name, cfg.Mode, name, diff)
			}
		}
	}
}

func TestRunRejectsBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		sentinel *spec.Sentinel
		field    string
	}{
		{"no tree", Config{Mode: ModeTokens}, spec.ErrBadEnum, "new_tree"},
		{"unknown mode", Config{Mode: "pages", NewTree: ref.NewRadixTree}, spec.ErrBadEnum, "mode"},
		{"negative page size", Config{Mode: ModeTokens, PageSize: -1, NewTree: ref.NewRadixTree}, spec.ErrInvalidPageSize, "page_size"},
		{"huge page size", Config{Mode: ModeTokens, PageSize: MaxPageSize + 1, NewTree: ref.NewRadixTree}, spec.ErrInvalidPageSize, "page_size"},
		{"paged blocks", Config{Mode: ModeBlocks, PageSize: 64, NewTree: ref.NewRadixTree}, spec.ErrInvalidPageSize, "page_size"},
		{"negative capacity", Config{Mode: ModeTokens, CapacityTokens: -1, NewTree: ref.NewRadixTree}, spec.ErrNegative, "capacity_tokens"},
		{"capacity under a page", Config{Mode: ModeTokens, CapacityTokens: 63, NewTree: ref.NewRadixTree}, ErrBadCapacity, "capacity_tokens"},
		{"capacity under a block", Config{Mode: ModeBlocks, CapacityTokens: 511, NewTree: ref.NewRadixTree}, ErrBadCapacity, "capacity_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(nil, tc.cfg)
			ie, ok := spec.AsInputError(err)
			if !ok || ie.Err != tc.sentinel || ie.Field != tc.field {
				t.Errorf("Run = %v; want %s on %s", err, tc.sentinel.Code(), tc.field)
			}
		})
	}
}

func TestRunRejectsBadRequestsBeforeReplaying(t *testing.T) {
	calls := 0
	counting := func(cfg spec.TreeConfig) (spec.RadixTree, error) { calls++; return ref.NewRadixTree(cfg) }
	reqs := []Request{{Timestamp: 5, InputLength: 1, HashIDs: []spec.Unit{1}}, {Timestamp: 6, InputLength: 513, HashIDs: []spec.Unit{1}}}
	_, err := Run(reqs, Config{Mode: ModeTokens, NewTree: counting})
	if !errors.Is(err, ErrInconsistentLength) || err.Error()[:12] != "requests[1]:" || calls != 0 {
		t.Errorf("Run = %v after %d trees; want requests[1]'s inconsistent_length before any tree", err, calls)
	}
}

func TestAnEmptyTraceReportsNothing(t *testing.T) {
	rep, err := Run(nil, Config{Mode: ModeBlocks, NewTree: ref.NewRadixTree})
	if err != nil || rep.Deterministic() != (Report{Mode: ModeBlocks, PageSize: 1}) {
		t.Errorf("Run(nil) = %+v, %v", rep, err)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if p50, p99 := percentile(ds, 0.5), percentile(ds, 0.99); p50 != 5 || p99 != 10 {
		t.Errorf("p50 %d, p99 %d of 1..10; want 5 and 10", p50, p99)
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing should be 0")
	}
}

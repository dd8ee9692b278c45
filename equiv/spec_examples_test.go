package equiv

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// Hand-derived spec examples (issue 30 item 7): each expected output below
// is computed from the spec text in the comment beside it, never taken from
// ref, and both twins must give it. The differential suite cannot see a
// misreading both twins share (ref.EvictOrder is fast's too, and so is
// every grid helper fast borrows); these examples can. docs/coverage.md
// ("Hand-derived examples") lists the optional-field defaults, tie-break
// keys and clamps of the specs and the test that pins each.

func twinTrees(t *testing.T) map[catalog.Impl]spec.NewRadixTreeFunc {
	t.Helper()
	out := map[catalog.Impl]spec.NewRadixTreeFunc{}
	for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		f, err := catalog.RadixTree(impl)
		if err != nil {
			t.Fatal(err)
		}
		out[impl] = f
	}
	return out
}

func units(us ...spec.Unit) spec.RadixKey { return spec.RadixKey{Units: us} }

// TestEvictionOrderTieBreaksEveryKeyOfEveryPolicyOnBothTwins pins every key
// of every eviction order of docs/spec/radix-acks.md §1.2 item 3 — LRU
// (lastAccess, id), LFU (hitCount, lastAccess, id), FIFO (created, id), MRU
// (−lastAccess, id), FILO (−created, id), priority (priority, lastAccess,
// id) — on one tree whose leaves tie on the first key, and whose created
// and lastAccess orders differ so that no key can stand in for another.
// Page size 1, the plain tree (hitCount stays 0, §1.2's amendment), every
// call one tick that stamps what it touches (§1.2 item 2):
//
//	tick 1  Insert([5], prio 5)    leaf n1: created 1, last 1, prio 5
//	tick 2  Insert([1 2], prio 5)  leaf n2: created 2, last 2, prio 5
//	tick 3  Insert([1 3], prio 5)  walks n2 (last 3) and splits it (§1.6):
//	                               the prefix [1] is n3 (fresh id, created
//	                               and last 3, prio 5), the suffix [2] keeps
//	                               n2 (created 2, last 3); leaf n4 [3]:
//	                               created 3, last 3, prio 5
//	tick 4  Insert([4], prio 2)    leaf n5: created 4, last 4, prio 2
//	tick 5  MatchPrefix([4])       n5: last 5
//	tick 6  MatchPrefix([5])       n1: last 6
//
// Evict(5) takes every leaf in order; n3 becomes a leaf once n2 and n4 are
// gone (§1.8), keyed by its own stamps.
//
//	LRU   n2 (3, id 2) ties n4 (3, id 4): n2, n4; then n3 (3), n5 (5), n1 (6)
//	LFU   hitCount 0 everywhere, so the LRU order
//	FIFO  n1 (1), n2 (2), n4 (3); then n3 (3) before n5 (4)
//	MRU   n1 (−6), n5 (−5), then n2 and n4 tie at −3: n2, n4; then n3
//	FILO  n5 (−4), n4 (−3), n2 (−2); then n3 (−3) before n1 (−1)
//	prio  n5 (2); then n2 (5,3,id 2) ties n4 (5,3,id 4): n2, n4; then n3
//	      (5,3) before n1 (5,6): the second key is lastAccess, not created
//	      (by created, n1 would come first)
func TestEvictionOrderTieBreaksEveryKeyOfEveryPolicyOnBothTwins(t *testing.T) {
	want := map[spec.EvictPolicy][]spec.NodeID{
		spec.PolicyLRU:      {2, 4, 3, 5, 1},
		spec.PolicyLFU:      {2, 4, 3, 5, 1},
		spec.PolicyFIFO:     {1, 2, 4, 3, 5},
		spec.PolicyMRU:      {1, 5, 2, 4, 3},
		spec.PolicyFILO:     {5, 4, 2, 3, 1},
		spec.PolicyPriority: {5, 2, 4, 3, 1},
	}
	for impl, newTree := range twinTrees(t) {
		for _, policy := range slices.Sorted(maps.Keys(want)) {
			tr, err := newTree(spec.TreeConfig{PageSize: 1, Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []struct {
				key  spec.RadixKey
				prio int
			}{{units(5), 5}, {units(1, 2), 5}, {units(1, 3), 5}, {units(4), 2}} {
				if _, err := tr.Insert(in.key, nil, in.prio); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []spec.RadixKey{units(4), units(5)} {
				if _, err := tr.MatchPrefix(k); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tr.Evict(5)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want[policy], got.Victims); d != "" {
				t.Errorf("%s, %s victims (-hand-derived +got):\n%s", impl, policy, d)
			}
		}
	}
}

// TestInsertWithoutAValueStoresTheTokensOnBothTwins pins the default of
// Insert's optional value (docs/spec/radix-acks.md §1.5, amendment
// "simulation mode"): with the value omitted, the slots are the key's
// tokens before any bigram conversion, truncated like a value. So on a
// plain tree [7 8 9] matches back as slots [7 8 9]; on an EAGLE tree
// (page size 1) the tokens [5 7 7 9] become the 3 bigrams (5,7) (7,7)
// (7,9) (§2) and the slots [5 7 7 9] are truncated to their first 3,
// [5 7 7].
func TestInsertWithoutAValueStoresTheTokensOnBothTwins(t *testing.T) {
	for impl, newTree := range twinTrees(t) {
		for _, c := range []struct {
			cfg  spec.TreeConfig
			key  spec.RadixKey
			want []spec.SlotIdx
		}{
			{spec.TreeConfig{PageSize: 1}, units(7, 8, 9), []spec.SlotIdx{7, 8, 9}},
			{spec.TreeConfig{PageSize: 1, Eagle: true}, units(5, 7, 7, 9), []spec.SlotIdx{5, 7, 7}},
		} {
			tr, err := newTree(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Insert(c.key, nil, 0); err != nil {
				t.Fatal(err)
			}
			got, err := tr.MatchPrefix(c.key)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got.Indices); d != "" {
				t.Errorf("%s, eagle %v: slots of %v (-hand-derived +got):\n%s", impl, c.cfg.Eagle, c.key.Units, d)
			}
		}
	}
}

// TestMaskedGridDefaultsToMMaxAndIsCappedByItOnBothTwins pins the masked
// MoE grid of docs/spec/admission-serving.md §S3.4: dense(min(m_max,
// masked_m_max)), masked_m_max defaulting to m_max. With
// chunked_prefill_size 8192, m_max is 16384 (§S3.3: not above 8192, so
// the 16384 default). dense(h) = sorted({1..min(32,h)} ∪ geo(h) ∪ {h}),
// geo(h) the powers of two and the 3·2^(k−1) up to h.
//
//	masked_m_max 0 (unset)  dense(16384): 1..32, then 48 64 96 128 192 256
//	                        384 512 768 1024 1536 2048 3072 4096 6144 8192
//	                        12288 16384 (50 points, as §S3.4 counts)
//	masked_m_max 100        dense(100): 1..32, then geo's 48 64 96 and 100
//	masked_m_max 20000      min(16384, 20000) = 16384: dense(16384) again
func TestMaskedGridDefaultsToMMaxAndIsCappedByItOnBothTwins(t *testing.T) {
	head := make([]int64, 32)
	for i := range head {
		head[i] = int64(i + 1)
	}
	full := append(slices.Clone(head), 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
	small := append(slices.Clone(head), 48, 64, 96, 100)
	op := catalog.DeepGEMMWarmupPlan()
	for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		f, err := op.Func(impl)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			masked int64
			want   []int64
		}{{0, full}, {100, small}, {20000, full}} {
			in := spec.DeepGEMMWarmupPlanInput{
				Env:                map[string]string{"HOME": "/root"},
				ChunkedPrefillSize: 8192,
				MaskedMMax:         c.masked,
				Alignment:          128,
				Build:              catalog.DeepGEMMBuildH200(),
				Kernels:            []spec.DeepGEMMKernel{{KernelType: spec.KernelGroupedMasked, N: 4096, K: 7168, NumGroups: 8}},
				Cache:              []spec.DeepGEMMCacheEntry{},
			}
			out, err := f(spec.DefaultLimits(), in)
			if err != nil {
				t.Fatalf("%s, masked_m_max %d: %v", impl, c.masked, err)
			}
			if out.MMax != 16384 || len(out.Plans) != 1 {
				t.Fatalf("%s, masked_m_max %d: m_max %d, %d plans; want 16384 and one", impl, c.masked, out.MMax, len(out.Plans))
			}
			if d := cmp.Diff(c.want, out.Plans[0].MGrid); d != "" {
				t.Errorf("%s, masked_m_max %d: grid (-hand-derived +got):\n%s", impl, c.masked, d)
			}
		}
	}
}

// TestErrorBodyTypeDefaultsToTheStatusOnBothTwins pins the default of the
// optional err_type of serving.error_body (docs/spec/admission-serving.md
// S1.3, amendment "`/generate` status and the default error type"): a
// missing err_type is PayloadTooLargeError for 413, BadRequestError for
// 400, else the status name (S1.4's HTTPStatus(code).name: 500 is
// INTERNAL_SERVER_ERROR, 503 SERVICE_UNAVAILABLE); a given one is kept.
// The OpenAI body is S1.3's compact ErrorResponse, the status as code.
// /generate answers 400 for every 4xx and keeps a 5xx, with the message
// alone.
func TestErrorBodyTypeDefaultsToTheStatusOnBothTwins(t *testing.T) {
	openai := func(typ string, code int) string {
		return fmt.Sprintf(`{"object":"error","message":"m","type":"%s","param":null,"code":%d}`, typ, code)
	}
	op := catalog.ServingErrorBody()
	for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		f, err := op.Func(impl)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			in     spec.ServingErrorBodyInput
			status int
			body   string
		}{
			{spec.ServingErrorBodyInput{Surface: "openai", Status: 413, Message: "m"}, 413, openai("PayloadTooLargeError", 413)},
			{spec.ServingErrorBodyInput{Surface: "openai", Status: 400, Message: "m"}, 400, openai("BadRequestError", 400)},
			{spec.ServingErrorBodyInput{Surface: "openai", Status: 500, Message: "m"}, 500, openai("INTERNAL_SERVER_ERROR", 500)},
			{spec.ServingErrorBodyInput{Surface: "openai", Status: 503, Message: "m"}, 503, openai("SERVICE_UNAVAILABLE", 503)},
			{spec.ServingErrorBodyInput{Surface: "openai", Status: 503, Message: "m", ErrType: "EngineDeadError"}, 503, openai("EngineDeadError", 503)},
			{spec.ServingErrorBodyInput{Surface: "generate", Status: 404, Message: "m"}, 400, `{"error":{"message":"m"}}`},
			{spec.ServingErrorBodyInput{Surface: "generate", Status: 503, Message: "m"}, 503, `{"error":{"message":"m"}}`},
		} {
			out, err := f(spec.DefaultLimits(), c.in)
			if err != nil || out.Status != c.status || out.Body != c.body {
				t.Errorf("%s, %+v: got %d %s (%v), want %d %s", impl, c.in, out.Status, out.Body, err, c.status, c.body)
			}
		}
	}
}

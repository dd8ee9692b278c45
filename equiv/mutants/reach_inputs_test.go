package mutants

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Reach classes of one input's shape: two failures in it, a short list
// whose first pair is out of order, a request past its own limit near a
// budget's stop. (Members the spec allows but does not name are
// reach_members_test.go's.)

type (
	estIn  = spec.AdmissionEstimateInput
	estOut = spec.AdmissionEstimateOutput
)

// estimateWithFirstTermAfter is fast's admission.estimate checking the
// overflow of term `second` before `first`: on an input where first
// overflows, it reports second's overflow when the input with first's
// factor set to 1 still overflows there.
func estimateWithFirstTermAfter(first, second string, lower func(*estIn)) catalog.Func[estIn, estOut] {
	return func(lim spec.Limits, in estIn) (estOut, error) {
		out, err := fast.AdmissionEstimate(lim, in)
		if errObj(err).Field != "estimate."+first {
			return out, err
		}
		low := in
		low.Requests = slices.Clone(in.Requests)
		lower(&low)
		if _, err2 := fast.AdmissionEstimate(lim, low); errObj(err2).Field == "estimate."+second {
			return estOut{}, err2
		}
		return out, err
	}
}

// estimateRequestsFirst is the shared validator checking the requests
// before the context: where both are invalid it reports the request.
func estimateRequestsFirst(lim spec.Limits, in estIn) (estOut, error) {
	out, err := ref.AdmissionEstimate(lim, in)
	if err != nil && !strings.HasPrefix(errObj(err).Field, "requests[") && !strings.HasPrefix(errObj(err).Field, "estimate.") {
		if rerr := ref.CheckEstimateReqs(in.Requests); rerr != nil {
			return estOut{}, rerr
		}
	}
	return out, err
}

// estimateExtendFirst is the shared request check testing extend_len
// before prefix_len.
func estimateExtendFirst(lim spec.Limits, in estIn) (estOut, error) {
	out, err := ref.AdmissionEstimate(lim, in)
	for i, r := range in.Requests {
		if r.PrefixLen < 0 && r.ExtendLen < 0 && errObj(err).Field == spec.Idx("requests", i)+".prefix_len" {
			return estOut{}, ref.CheckEstimateReq(i, spec.EstimateReq{ExtendLen: r.ExtendLen})
		}
	}
	return out, err
}

// estimateLastBadRequest is the shared request check reporting the last
// bad request instead of the first.
func estimateLastBadRequest(lim spec.Limits, in estIn) (estOut, error) {
	out, err := ref.AdmissionEstimate(lim, in)
	if !strings.HasPrefix(errObj(err).Field, "requests[") {
		return out, err
	}
	for i := len(in.Requests) - 1; i >= 0; i-- {
		if rerr := ref.CheckEstimateReq(i, in.Requests[i]); rerr != nil {
			return estOut{}, rerr
		}
	}
	return out, err
}

// unitEstimator is a CP-1 context of one byte per row, page and position,
// page size 1, no transfer, logits, prefetch or cap: each term is then the
// sum of its request lengths, so the spec's formulas give values by hand.
func unitEstimator(cp int64) spec.EstimatorContext {
	ctx := catalog.EstimatorA25Context(cp)
	ctx.PageSize, ctx.MLARowBytes, ctx.IndexRowBytes, ctx.PageDescriptorBytes, ctx.RowRemapBytes = 1, 1, 1, 1, 1
	ctx.LogitRowsPerReq, ctx.TransferEnabled, ctx.BsGt1L1PrefetchEnabled = 0, false, false
	ctx.Chunk = spec.MQAChunkConfig{}
	return ctx
}

// estimateTwoFailureExamples are hand-derived from admission-serving.md
// A2.7's amendments: "Validation order: the context in field order, …, the
// requests in order (prefix before extend), then the terms", and overflow
// "checked in A2.4's order: the first term whose exact value exceeds int64"
// (rows, mla, index, remap, transfer, logits, MQA ranks ascending, …).
func estimateTwoFailureExamples() []handExample[estIn, estOut] {
	rejected := func(code, field string) func(estOut, error) error {
		w := wantRejected(code, field)
		return func(_ estOut, err error) error { return w(err) }
	}
	badPage := unitEstimator(1)
	badPage.PageSize = 0
	// rows = 2^61 fits; 8·2^61 = 2^64 does not, for mla and index alike.
	both := unitEstimator(1)
	both.MLARowBytes, both.IndexRowBytes = 8, 8
	// rows = 2^40; remap = 2^40 + 2^40·2^23 > 2^63 and transfer =
	// 2^40·2^23·1 = 2^63 > int64 max: both overflow, remap comes first.
	rt := unitEstimator(1)
	rt.RowRemapBytes, rt.TransferEnabled, rt.TransferLayers, rt.DescriptorBytes = 1<<23, true, 1<<23, 1
	// One extend token: transfer = 1·2^62·4 = 2^64 and logits = 1·1·2^62·4
	// = 2^64 both overflow; transfer comes first.
	tl := unitEstimator(1)
	tl.TransferEnabled, tl.TransferLayers, tl.DescriptorBytes = true, 1<<62, 4
	tl.LogitRowsPerReq, tl.VocabSize = 1, 1<<62
	// CP 2, one request of extend 2^33 and no cap: each rank's Q is 2^32
	// and K at least 2^32, so Q·K·4 >= 2^66 on both ranks; rank 0 first.
	ranks := unitEstimator(2)
	return []handExample[estIn, estOut]{
		{"page-size-0-and-a-negative-prefix-is-the-page-size", estIn{Context: badPage, Requests: []spec.EstimateReq{{PrefixLen: -1}}},
			rejected(spec.ErrInvalidPageSize.Code(), "context.page_size")},
		{"negative-prefix-and-extend-is-the-prefix", estIn{Context: unitEstimator(1), Requests: []spec.EstimateReq{{PrefixLen: -1, ExtendLen: -2}}},
			rejected(spec.ErrNegative.Code(), "requests[0].prefix_len")},
		{"two-bad-requests-is-the-first", estIn{Context: unitEstimator(1), Requests: []spec.EstimateReq{{ExtendLen: -1}, {PrefixLen: -2}}},
			rejected(spec.ErrNegative.Code(), "requests[0].extend_len")},
		{"mla-and-index-overflow-is-mla", estIn{Context: both, Requests: []spec.EstimateReq{{PrefixLen: 1 << 61}}},
			rejected(spec.ErrOverflow.Code(), "estimate.mla_materialize_bytes")},
		{"remap-and-transfer-overflow-is-remap", estIn{Context: rt, Requests: []spec.EstimateReq{{ExtendLen: 1 << 40}}},
			rejected(spec.ErrOverflow.Code(), "estimate.remap_metadata_bytes")},
		{"transfer-and-logits-overflow-is-transfer", estIn{Context: tl, Requests: []spec.EstimateReq{{ExtendLen: 1}}},
			rejected(spec.ErrOverflow.Code(), "estimate.transfer_descriptor_bytes")},
		{"two-ranks-overflow-is-rank-0", estIn{Context: ranks, Requests: []spec.EstimateReq{{ExtendLen: 1 << 33}}},
			func(_ estOut, err error) error {
				if err := wantRejected(spec.ErrOverflow.Code(), "estimate.mqa_logits_peak_bytes")(err); err != nil {
					return err
				}
				if v := fmt.Sprint(errObj(err).Value); !strings.HasPrefix(v, "rank 0:") {
					return fmt.Errorf("value %q, want rank 0's operands", v)
				}
				return nil
			}},
	}
}

// TestReachTwoIndependentFailuresInOneInput: an input with two failures
// must be reported by the one the spec's check order puts first. Plants:
// fast checking one overflowing term before another, and the shared
// validator checking the requests before the context, extend before
// prefix, or the last bad request first.
func TestReachTwoIndependentFailuresInOneInput(t *testing.T) {
	setFactor := func(set func(*spec.EstimatorContext)) func(*estIn) {
		return func(in *estIn) { set(&in.Context) }
	}
	reachClass[estIn, estOut]{
		spec: equiv.AdmissionEstimate(),
		plants: []reachPlant[estIn, estOut]{
			{name: "fast: index overflow checked before mla", fn: estimateWithFirstTermAfter("mla_materialize_bytes", "index_materialize_bytes",
				setFactor(func(c *spec.EstimatorContext) { c.MLARowBytes = 1 }))},
			{name: "fast: transfer overflow checked before remap", fn: estimateWithFirstTermAfter("remap_metadata_bytes", "transfer_descriptor_bytes",
				setFactor(func(c *spec.EstimatorContext) { c.RowRemapBytes, c.PageDescriptorBytes = 1, 1 }))},
			{name: "fast: logits overflow checked before transfer", fn: estimateWithFirstTermAfter("transfer_descriptor_bytes", "logits_window_bytes",
				setFactor(func(c *spec.EstimatorContext) { c.TransferEnabled = false }))},
			{name: "shared: requests validated before the context", fn: estimateRequestsFirst, shared: true},
			{name: "shared: extend_len checked before prefix_len", fn: estimateExtendFirst, shared: true},
			{name: "shared: the last bad request reported", fn: estimateLastBadRequest, shared: true},
		},
		examples: estimateTwoFailureExamples(),
	}.run(t)
}

// pageDescriptorsFirstPairUnchecked is fast's cp.page_descriptors whose
// already-sorted fast path starts comparing at the second pair: a row
// whose only disorder (or repeat) is its first pair is copied as it is.
func pageDescriptorsFirstPairUnchecked(lim spec.Limits, in spec.CPPageDescriptorsInput) (spec.CPPageDescriptorsOutput, error) {
	fixed := spec.CPPageDescriptorsInput{Pages: make([][]int64, len(in.Pages))}
	var bad []int
	for b, row := range in.Pages {
		fixed.Pages[b] = row
		if firstPairOnlyDisorder(row) {
			bad = append(bad, b)
			fixed.Pages[b] = slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(row)))))
			for len(fixed.Pages[b]) < len(row) { // a repeat: pad with fresh pages so the row keeps its length
				fixed.Pages[b] = append(fixed.Pages[b], fixed.Pages[b][len(fixed.Pages[b])-1]+1)
			}
		}
	}
	out, err := fast.CPPageDescriptors(lim, fixed)
	if err != nil {
		return out, err
	}
	for _, b := range bad {
		lo := out.RowPtr[b]
		for j, p := range in.Pages[b] {
			out.Page[int(lo)+j], out.Slot[int(lo)+j] = p, lo+int32(j)
		}
	}
	return out, nil
}

// firstPairOnlyDisorder: row[1] <= row[0], all pages >= 0, and row[1:] is
// strictly ascending.
func firstPairOnlyDisorder(row []int64) bool {
	if len(row) < 2 || row[1] > row[0] || row[0] < 0 || row[1] < 0 {
		return false
	}
	for j := 2; j < len(row); j++ {
		if row[j] <= row[j-1] {
			return false
		}
	}
	return true
}

// statePairingFirstPairUnchecked is the shared active-list check starting
// at the second pair: [0, 0, …] is accepted as [0, …].
func statePairingFirstPairUnchecked(lim spec.Limits, in spec.TransferStateLayerPairingInput) (spec.TransferStateLayerPairingOutput, error) {
	if in.Index != nil && len(in.Index.Active) >= 2 && in.Index.Active[0] == 0 && in.Index.Active[1] == 0 {
		idx := *in.Index
		idx.Active = idx.Active[1:]
		in.Index = &idx
	}
	return ref.TransferStateLayerPairing(lim, in)
}

// loadScriptFirstPairUnchecked is the shared pools check starting at the
// second pair of index_layers: a first pair out of order is taken sorted.
func loadScriptFirstPairUnchecked(lim spec.Limits, in spec.HiCacheLoadScriptInput) (spec.HiCacheLoadScriptOutput, error) {
	if l := in.Pools.IndexLayers; len(l) >= 2 && l[1] <= l[0] && l[1] >= 0 {
		fixed := slices.Clone(l)
		if l[1] == l[0] {
			fixed = slices.Delete(fixed, 1, 2)
		} else {
			fixed[0], fixed[1] = l[1], l[0]
		}
		in.Pools.IndexLayers = fixed
	}
	return ref.HiCacheLoadScript(lim, in)
}

// TestReachShortListsWhoseFirstPairIsOutOfOrder: a list that must be
// ascending and is out of order only in its first pair, as short as two.
// Plants: fast's sorted-row fast path of cp.page_descriptors, and the
// shared checks of transfer.state_layer_pairing's active list and of
// hicache.load_script's index layers, each starting at the second pair.
func TestReachShortListsWhoseFirstPairIsOutOfOrder(t *testing.T) {
	reachClass[spec.CPPageDescriptorsInput, spec.CPPageDescriptorsOutput]{
		spec: equiv.CPPageDescriptors(),
		plants: []reachPlant[spec.CPPageDescriptorsInput, spec.CPPageDescriptorsOutput]{
			{name: "fast: the sorted-row fast path skips the first pair", fn: pageDescriptorsFirstPairUnchecked},
		},
	}.run(t)

	rejected := func(code, field string) func(spec.TransferStateLayerPairingOutput, error) error {
		w := wantRejected(code, field)
		return func(_ spec.TransferStateLayerPairingOutput, err error) error { return w(err) }
	}
	pairing := spec.TransferStateLayerPairingInput{PPSize: 1,
		Src:   spec.StateRegistration{Ptrs: []uint64{0x1000}, ItemLens: []uint64{8}, LayerIDs: []int64{0}},
		Dst:   spec.StateRegistration{Ptrs: []uint64{0x2000}, ItemLens: []uint64{8}, LayerIDs: []int64{0}},
		Index: &spec.IndexConfig{NumHiddenLayers: 2, Active: []int64{0, 0}}}
	reachClass[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
		spec: equiv.TransferStateLayerPairing(),
		plants: []reachPlant[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
			{name: "shared: the active list's first pair is not compared", fn: statePairingFirstPairUnchecked, shared: true},
		},
		// transfer.md §5 amendment: the explicit list is "ascending, inside
		// [0, L), and contain layer 0"; [0, 0] repeats layer 0.
		examples: []handExample[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
			{"active-0-0-is-not-ascending", pairing, rejected(spec.ErrBadIndexPattern.Code(), "index.active[1]")},
		},
	}.run(t)

	loadRejected := func(field string) func(spec.HiCacheLoadScriptOutput, error) error {
		w := wantRejected(spec.ErrBadLoadPools.Code(), field)
		return func(_ spec.HiCacheLoadScriptOutput, err error) error { return w(err) }
	}
	pools := func(layers ...int) spec.HiCacheLoadScriptInput {
		return spec.HiCacheLoadScriptInput{Pools: spec.LoadPools{Layers: 3, HostSlots: 8, DevSlots: 8, KVBytes: 1, IndexBytes: 1, IndexLayers: layers}, Ops: []spec.LoadOp{}}
	}
	reachClass[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
		spec: equiv.HiCacheLoadScript(),
		plants: []reachPlant[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
			{name: "shared: index_layers' first pair is not compared", fn: loadScriptFirstPairUnchecked, shared: true},
		},
		// radix-acks.md §5.2: index layers are strictly ascending in [0, layers).
		examples: []handExample[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
			{"index-layers-1-0", pools(1, 0), loadRejected("pools.index_layers[1]")},
			{"index-layers-2-2", pools(2, 2), loadRejected("pools.index_layers[1]")},
		},
	}.run(t)
}

// roundRunningClamped is the shared running_offset clamped at 0: a running
// request past its max_new_tokens reserves nothing instead of returning
// the excess (§A1.3 does not clamp).
func roundRunningClamped(lim spec.Limits, in spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error) {
	in.Running = slices.Clone(in.Running)
	for i, r := range in.Running {
		if r.OutputLen > r.MaxNewTokens && r.MaxNewTokens >= 0 {
			in.Running[i].OutputLen = r.MaxNewTokens
		}
	}
	return ref.AdmissionRound(lim, in)
}

// roundPastLimitReservesAll is the shared total_tokens ignoring the output
// of a request past its own limit: it reserves min(max_new_tokens, CLIP)
// instead of max(max_new − output, 0) = 0 (§A1.6 step 2).
func roundPastLimitReservesAll(lim spec.Limits, in spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error) {
	in.Queue = slices.Clone(in.Queue)
	for i, r := range in.Queue {
		if r.OutputLen > r.MaxNewTokens {
			in.Queue[i].OutputLen = 0
		}
	}
	return ref.AdmissionRound(lim, in)
}

// roundPastLimitExamples are hand-derived from admission-serving.md §A1.3
// and §A1.6 on page size 1, ratio 1, no chunking and no CP.
func roundPastLimitExamples() []handExample[spec.AdmissionRoundInput, spec.AdmissionRoundOutput] {
	cfg := spec.AdderConfig{PageSize: 1, NewTokenRatio: 1, MaxPrefillTokens: 100000, MaxRunningRequests: 10}
	req := func(extend, maxNew, output int64) spec.Request {
		return spec.Request{RID: "r1", InputLen: extend, MaxNewTokens: maxNew, OutputLen: output}
	}
	admitted := func(out spec.AdmissionRoundOutput, err error) error {
		if err != nil {
			return err
		}
		if len(out.Admitted) != 1 || out.Admitted[0].RID != "r1" {
			return fmt.Errorf("admitted %+v, want r1", out.Admitted)
		}
		return nil
	}
	return []handExample[spec.AdmissionRoundInput, spec.AdmissionRoundOutput]{
		// running_offset = min(0 − 100, 4096)·1 = −100, so rem_total_tokens
		// = 1000 + 100 = 1100; r1's total_tokens = 1050 + 0 < 1100: admitted
		// (clamped at 0, rem_total_tokens would be 1000 <= 1050: NO_TOKEN).
		{"running-past-its-limit-returns-its-excess", spec.AdmissionRoundInput{Config: cfg, Pool: spec.PoolState{Available: 1000},
			Running: []spec.RunningReq{{MaxNewTokens: 0, OutputLen: 100}}, Queue: []spec.Request{req(1050, 0, 0)}}, admitted},
		// r1 is past its limit (output 20 > max_new 10): total_tokens =
		// 1000 + max(10 − 20, 0) = 1000 < rem_total_tokens 1001: admitted
		// (reserving min(10, 4096) = 10, 1010 >= 1001 would stop it).
		{"queued-past-its-limit-reserves-nothing", spec.AdmissionRoundInput{Config: cfg, Pool: spec.PoolState{Available: 1001},
			Queue: []spec.Request{req(1000, 10, 20)}}, admitted},
	}
}

// TestReachRequestsPastTheirOwnLimitNearABudgetStop: a request whose
// output is longer than its max_new_tokens, running or queued (retracted),
// where the reservation decides whether the budget stops. Both plants are
// in helpers both twins call (ref.RunningOffset, ref.TotalTokens).
func TestReachRequestsPastTheirOwnLimitNearABudgetStop(t *testing.T) {
	reachClass[spec.AdmissionRoundInput, spec.AdmissionRoundOutput]{
		spec: equiv.AdmissionRound(),
		plants: []reachPlant[spec.AdmissionRoundInput, spec.AdmissionRoundOutput]{
			{name: "shared: running_offset clamped at 0", fn: roundRunningClamped, shared: true},
			{name: "shared: a queued request past its limit reserves max_new", fn: roundPastLimitReservesAll, shared: true},
		},
		examples: roundPastLimitExamples(),
	}.run(t)
}

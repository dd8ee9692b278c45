package equiv

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

type (
	estIn  = spec.AdmissionEstimateInput
	estOut = spec.AdmissionEstimateOutput
)

// AdmissionEstimate is the differential spec of admission.estimate
// (docs/spec/admission-serving.md A2; the gate is A1.9 C5).
func AdmissionEstimate() *Spec[estIn, estOut] {
	return &Spec[estIn, estOut]{
		Op:          catalog.AdmissionEstimate(),
		Valid:       rapid.Custom(estimateValid),
		Invalid:     rapid.Custom(estimateInvalid),
		Boundary:    estimateBoundary(),
		Regressions: estimateRegressions(),
		Rejects: map[string]*spec.Sentinel{"estimate-both-caps-row-wins": spec.ErrConfig, "gb-cap-key-count-past-int64-logits": spec.ErrOverflow,
			"overflow-layer-forward-peak-prefetch-off": spec.ErrOverflow, "overflow-per-forward-terms-fit": spec.ErrOverflow,
			"two-failures-page-size-then-negative-prefix": spec.ErrInvalidPageSize, "two-failures-negative-prefix-then-extend": spec.ErrNegative,
			"two-failures-request-0-then-request-1": spec.ErrNegative, "two-overflows-mla-then-index": spec.ErrOverflow,
			"two-overflows-remap-then-transfer": spec.ErrOverflow, "two-overflows-transfer-then-logits": spec.ErrOverflow,
			"two-overflows-rank-0-then-rank-1": spec.ErrOverflow},
		Props: []Prop[estIn, estOut]{
			{"A2.4-terms", estimateTerms},
			{"A2.6.5-zigzag-ranks", estimateRanks},
			{"A2.6.1-monotone", estimateMonotone},
			{"A2.6.2-full-product-bound", estimateFullProduct},
			{"A2.6.3-row-cap", estimateRowCap},
			{"A2.6.4-gb-cap", estimateGBCap},
			{"A2.6.6-pure", estimatePure},
			{"C5-gate", estimateGate},
		},
	}
}

// estPS is the CP shared-KV page size the boundary lengths straddle.
const estPS = spec.DefaultEstimatorPageSize

// EstimateContextGen draws an estimator context: A2.5's defaults or
// arbitrary sizes, CP 1..8, any one chunk cap or none (GiB caps from a
// whole number of bytes that binds on small batches to past 2^63 bytes).
func EstimateContextGen(t *rapid.T) spec.EstimatorContext {
	ctx := catalog.EstimatorA25Context(rapid.Int64Range(1, 8).Draw(t, "cp_size"))
	ctx.PageSize = rapid.SampledFrom([]int64{1, 2, 3, estPS - 1, estPS, estPS + 1, 256}).Draw(t, "page_size")
	if rapid.Bool().Draw(t, "custom_sizes") {
		ctx.MLARowBytes = rapid.Int64Range(1, 1024).Draw(t, "mla_row_bytes")
		ctx.IndexRowBytes = rapid.Int64Range(1, 256).Draw(t, "index_row_bytes")
		ctx.VocabSize = rapid.Int64Range(1, 300_000).Draw(t, "vocab_size")
		ctx.LogitRowsPerReq = rapid.Int64Range(0, 4).Draw(t, "logit_rows_per_req")
		ctx.TransferEnabled = rapid.Bool().Draw(t, "transfer_enabled")
		ctx.TransferLayers = rapid.Int64Range(0, 100).Draw(t, "transfer_layers")
		ctx.DescriptorBytes = rapid.Int64Range(1, 64).Draw(t, "descriptor_bytes")
		ctx.PageDescriptorBytes = rapid.Int64Range(1, 64).Draw(t, "page_descriptor_bytes")
		ctx.RowRemapBytes = rapid.Int64Range(1, 16).Draw(t, "row_remap_bytes")
		ctx.BsGt1L1PrefetchEnabled = rapid.Bool().Draw(t, "prefetch")
	}
	switch rapid.IntRange(0, 2).Draw(t, "cap") {
	case 1:
		n := rapid.OneOf(rapid.Int64Range(1, 64), rapid.Int64Range(1, 1<<40)).Draw(t, "max_rows")
		ctx.Chunk.MaxRows = &n
	case 2:
		g := rapid.OneOf(
			rapid.Map(rapid.Int64Range(1, 1<<24), func(b int64) float64 { return float64(b) / (1 << 30) }),
			rapid.Float64Range(1e-9, 1e3),
			rapid.SampledFrom([]float64{0.01, 0.0001, 1, 1 << 33, 1e300}),
		).Draw(t, "max_gb")
		ctx.Chunk.MaxGB = &g
	}
	return ctx
}

// estLen draws a prefix or extend length: zero, around the page size and
// 2·cp, small, or large.
func estLen(t *rapid.T, cp int64, label string) int64 {
	return rapid.OneOf(
		rapid.Just(int64(0)),
		rapid.SampledFrom([]int64{1, estPS - 1, estPS, estPS + 1, 2*cp - 1, 2 * cp, 2*cp + 1}),
		rapid.Int64Range(0, 300),
		rapid.Int64Range(0, 1<<20),
	).Draw(t, label)
}

// EstimateReqsGen draws 0..6 requests for CP size cp.
func EstimateReqsGen(t *rapid.T, cp int64) []spec.EstimateReq {
	n := rapid.IntRange(0, 6).Draw(t, "n_reqs")
	reqs := make([]spec.EstimateReq, n)
	for i := range reqs {
		reqs[i] = spec.EstimateReq{PrefixLen: estLen(t, cp, "prefix_len"), ExtendLen: estLen(t, cp, "extend_len")}
	}
	return reqs
}

func estimateValid(t *rapid.T) estIn {
	in := estIn{Context: EstimateContextGen(t)}
	in.Requests = EstimateReqsGen(t, in.Context.CPSize)
	if rapid.Bool().Draw(t, "gate") {
		m := rapid.OneOf(rapid.Int64Range(1, 1<<20), rapid.Int64Range(1, 1<<34)).Draw(t, "max_buffer_size_bytes")
		in.MaxBufferSizeBytes = &m
	}
	return in
}

// estimateInvalid draws an input with one violation and, one time in four,
// a second independent one that A2.7's order checks later (a reach class
// of issue 30: which of two failures is reported is part of the contract,
// so the error compared whole must name the first).
func estimateInvalid(t *rapid.T) Bad[estIn] {
	b := estimateOneFailure(t)
	if rapid.IntRange(0, 3).Draw(t, "second_failure") == 0 {
		estimateSecondFailure(t, &b)
	}
	return b
}

// estimateSecondFailure adds to b a failure A2.7 checks after b's: to an
// overflow another overflowing term (the sentinel stays overflow; the
// field names the term A2.4 lists first); to a validation failure a
// negative extend beside a negative prefix (prefix before extend) or a
// negative request after every other (requests in order, after the
// context). No field b's violation may sit in is touched.
func estimateSecondFailure(t *rapid.T, b *Bad[estIn]) {
	in := &b.In
	in.Requests = slices.Clone(in.Requests)
	if b.Want == spec.ErrOverflow {
		ctx := &in.Context
		switch rapid.IntRange(0, 2).Draw(t, "second_overflow") {
		case 0: // the logits window
			ctx.LogitRowsPerReq = max(ctx.LogitRowsPerReq, 1)
			ctx.VocabSize = rapid.Int64Range(math.MaxInt64/4+1, math.MaxInt64).Draw(t, "second_vocab")
		case 1: // the transfer descriptors
			ctx.TransferEnabled = true
			ctx.TransferLayers = rapid.Int64Range(math.MaxInt64/2, math.MaxInt64).Draw(t, "second_layers")
			in.Requests = append(in.Requests, spec.EstimateReq{ExtendLen: 2*ctx.PageSize + 1})
		default: // the materialization bytes of a huge prefix
			ctx.MLARowBytes, ctx.IndexRowBytes = max(ctx.MLARowBytes, 1<<10), max(ctx.IndexRowBytes, 1<<10)
			in.Requests = append(in.Requests, spec.EstimateReq{PrefixLen: rapid.Int64Range(math.MaxInt64/512, math.MaxInt64/64).Draw(t, "second_prefix")})
		}
		return
	}
	for i := range in.Requests {
		if in.Requests[i].PrefixLen < 0 && rapid.Bool().Draw(t, "second_extend") {
			in.Requests[i].ExtendLen = rapid.Int64Range(math.MinInt64, -1).Draw(t, "second_extend_len")
			return
		}
	}
	in.Requests = append(in.Requests, spec.EstimateReq{PrefixLen: rapid.Int64Range(math.MinInt64, -1).Draw(t, "second_negative")})
}

// estimateOneFailure draws an input with exactly one violation.
func estimateOneFailure(t *rapid.T) Bad[estIn] {
	in := estimateValid(t)
	type bad = Bad[estIn]
	if len(in.Requests) == 0 {
		in.Requests = []spec.EstimateReq{{PrefixLen: 1, ExtendLen: 1}}
	}
	at := rapid.IntRange(0, len(in.Requests)-1).Draw(t, "bad_at")
	neg := func(label string) int64 { return rapid.Int64Range(math.MinInt64, -1).Draw(t, label) }
	below1 := func(label string) int64 { return rapid.Int64Range(math.MinInt64, 0).Draw(t, label) }
	ctx := &in.Context
	switch rapid.IntRange(0, 19).Draw(t, "violation") {
	case 0:
		ctx.PageSize = below1("page_size")
		return bad{in, spec.ErrInvalidPageSize}
	case 1:
		ctx.CPSize = below1("cp_size")
		return bad{in, spec.ErrBadCPSize}
	case 2:
		ctx.CPSize = rapid.Int64Range(spec.MaxCP+1, math.MaxInt64).Draw(t, "cp_size")
		return bad{in, spec.ErrInvalidCPSize}
	case 3:
		*rapid.SampledFrom([]*int64{&ctx.MLARowBytes, &ctx.IndexRowBytes, &ctx.VocabSize,
			&ctx.DescriptorBytes, &ctx.PageDescriptorBytes, &ctx.RowRemapBytes}).Draw(t, "size_field") = below1("size")
		return bad{in, spec.ErrEstimatorParam}
	case 4:
		*rapid.SampledFrom([]*int64{&ctx.LogitRowsPerReq, &ctx.TransferLayers}).Draw(t, "count_field") = neg("count")
		return bad{in, spec.ErrNegative}
	case 5:
		rows, g := rapid.Int64Range(1, 1<<20).Draw(t, "rows"), rapid.Float64Range(1e-6, 8).Draw(t, "gb")
		ctx.Chunk = spec.MQAChunkConfig{MaxRows: &rows, MaxGB: &g}
		return bad{in, spec.ErrConfig}
	case 6:
		rows := below1("max_rows")
		ctx.Chunk = spec.MQAChunkConfig{MaxRows: &rows}
		return bad{in, spec.ErrConfig}
	case 7:
		g := rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(-1e300, -1e-300), rapid.Float64Range(1e-300, 0.99/(1<<30))).Draw(t, "max_gb")
		ctx.Chunk = spec.MQAChunkConfig{MaxGB: &g}
		return bad{in, spec.ErrConfig}
	case 8:
		m := below1("max_buffer_size_bytes")
		in.MaxBufferSizeBytes = &m
		return bad{in, spec.ErrEstimatorParam}
	case 9:
		in.Requests[at].PrefixLen = neg("prefix_len")
		return bad{in, spec.ErrNegative}
	case 10:
		in.Requests[at].ExtendLen = neg("extend_len")
		return bad{in, spec.ErrNegative}
	case 11:
		// rows past int64: a context near MaxInt64 rounded up to its page.
		in.Requests[at].PrefixLen = math.MaxInt64 - rapid.Int64Range(0, ctx.PageSize-1).Draw(t, "below_max")
		in.Requests[at].ExtendLen = max(in.Requests[at].ExtendLen, ctx.PageSize)
		return bad{in, spec.ErrOverflow}
	case 12:
		// The materialization bytes: rows·row bytes past int64.
		in.Requests[at].PrefixLen = rapid.Int64Range(math.MaxInt64/512, math.MaxInt64/64).Draw(t, "big_prefix")
		ctx.MLARowBytes = rapid.Int64Range(1024, 1<<20).Draw(t, "big_mla")
		return bad{in, spec.ErrOverflow}
	case 13:
		// The MQA term: E·(P+E)·4 past int64 without a cap.
		ctx.Chunk = spec.MQAChunkConfig{}
		ctx.MLARowBytes, ctx.IndexRowBytes, ctx.PageDescriptorBytes, ctx.RowRemapBytes = 1, 1, 1, 1
		ctx.TransferEnabled = false
		e := rapid.Int64Range(1<<36, 1<<40).Draw(t, "huge_extend")
		in.Requests[at] = spec.EstimateReq{PrefixLen: rapid.Int64Range(0, 1<<40).Draw(t, "prefix"), ExtendLen: e}
		return bad{in, spec.ErrOverflow}
	case 14:
		// The logits window: vocab past int64/4.
		ctx.LogitRowsPerReq = max(ctx.LogitRowsPerReq, 1)
		ctx.VocabSize = rapid.Int64Range(math.MaxInt64/4+1, math.MaxInt64).Draw(t, "huge_vocab")
		return bad{in, spec.ErrOverflow}
	case 15:
		ctx.TransferEnabled = true
		ctx.TransferLayers = rapid.Int64Range(math.MaxInt64/2, math.MaxInt64).Draw(t, "huge_layers")
		in.Requests[at].ExtendLen = max(in.Requests[at].ExtendLen, 2*ctx.PageSize+1)
		return bad{in, spec.ErrOverflow}
	case 16:
		// The remap term: ctx·row_remap_bytes past int64 while rows fit.
		ctx.PageSize, ctx.MLARowBytes, ctx.IndexRowBytes = 1, 1, 1
		ctx.RowRemapBytes = rapid.Int64Range(1<<20, 1<<30).Draw(t, "big_remap")
		in.Requests[at].PrefixLen = rapid.Int64Range(math.MaxInt64>>20, math.MaxInt64>>4).Draw(t, "prefix")
		return bad{in, spec.ErrOverflow}
	case 17:
		// The total: five terms near MaxInt64/3 each.
		ctx.PageSize, ctx.MLARowBytes, ctx.IndexRowBytes, ctx.PageDescriptorBytes, ctx.RowRemapBytes = 1, 1, 1, 1, 1
		ctx.Chunk = spec.MQAChunkConfig{}
		in.Requests = []spec.EstimateReq{{PrefixLen: math.MaxInt64 / 3, ExtendLen: 0}}
		return bad{in, spec.ErrOverflow}
	case 18:
		// A GiB cap that leaves one row: 4·K past int64.
		g := 1.0
		ctx.Chunk = spec.MQAChunkConfig{MaxGB: &g}
		ctx.PageSize, ctx.MLARowBytes, ctx.IndexRowBytes, ctx.PageDescriptorBytes, ctx.RowRemapBytes = 1, 1, 1, 1, 1
		ctx.TransferEnabled = false
		in.Requests = []spec.EstimateReq{{PrefixLen: math.MaxInt64/4 + rapid.Int64Range(1, 1<<20).Draw(t, "over"), ExtendLen: 1}}
		return bad{in, spec.ErrOverflow}
	default:
		ctx.Chunk = spec.MQAChunkConfig{}
		ctx.BsGt1L1PrefetchEnabled = true
		ctx.PageSize, ctx.IndexRowBytes = 1, 1
		ctx.MLARowBytes = rapid.Int64Range(1<<20, 1<<22).Draw(t, "mla")
		in.Requests = []spec.EstimateReq{{PrefixLen: math.MaxInt64 / ctx.MLARowBytes, ExtendLen: 0}}
		return bad{in, spec.ErrOverflow}
	}
}

// estCase is a one-context input for the tables.
func estCase(ctx spec.EstimatorContext, limit int64, reqs ...spec.EstimateReq) estIn {
	in := estIn{Context: ctx, Requests: reqs}
	if limit > 0 {
		in.MaxBufferSizeBytes = &limit
	}
	if in.Requests == nil {
		in.Requests = []spec.EstimateReq{}
	}
	return in
}

// A2.5's requests.
var (
	estX1 = spec.EstimateReq{PrefixLen: 8192, ExtendLen: 4096}
	estX4 = spec.EstimateReq{PrefixLen: 100000, ExtendLen: 7}
)

func withChunk(ctx spec.EstimatorContext, c spec.MQAChunkConfig) spec.EstimatorContext {
	ctx.Chunk = c
	return ctx
}

// estimateBoundary: A2.5's worked examples, the gate at its edge, lengths
// at the page size and 2·cp, c = 1, empty batches and zero extends, every
// cap, and the int64 edge of the GiB cap.
func estimateBoundary() []Case[estIn] {
	a25 := catalog.EstimatorA25Context
	rows512, gb001, gb00001, huge, edge := int64(512), 0.01, 0.0001, 1e300, float64(1<<33)
	const x1Total = 111_188_480
	cs := []Case[estIn]{
		{"X1", estCase(a25(2), 128<<20, estX1)},
		{"X2-128MiB", estCase(a25(2), 128<<20, estX1, estX1)},
		{"X2-rows512", estCase(withChunk(a25(2), spec.MQAChunkConfig{MaxRows: &rows512}), 128<<20, estX1, estX1)},
		{"X3-gb0.01", estCase(withChunk(a25(2), spec.MQAChunkConfig{MaxGB: &gb001}), 0, estX1)},
		{"X4", estCase(a25(4), 0, estX4)},
		{"X4-gb0.0001-one-row-floor", estCase(withChunk(a25(4), spec.MQAChunkConfig{MaxGB: &gb00001}), 0, estX4)},
		{"A3.4-request-a", estCase(a25(8), 0, spec.EstimateReq{PrefixLen: 4096, ExtendLen: 64})},
		{"gate-at-limit", estCase(a25(2), x1Total, estX1, spec.EstimateReq{})},
		{"gate-one-over-alone", estCase(a25(2), x1Total-1, estX1)},
		{"gate-one-over-pair", estCase(a25(2), 1, spec.EstimateReq{}, estX1)},
		{"empty-batch", estCase(a25(3), 1)},
		{"zero-extends", estCase(a25(2), 0, spec.EstimateReq{PrefixLen: 5}, spec.EstimateReq{})},
		{"cp1-non-cp-shape", estCase(a25(1), 0, spec.EstimateReq{PrefixLen: 10, ExtendLen: 5}, spec.EstimateReq{ExtendLen: 3})},
		{"gb-1e300-exact", estCase(withChunk(a25(2), spec.MQAChunkConfig{MaxGB: &huge}), 0, estX1)},
		{"gb-2^33-int64-edge", estCase(withChunk(a25(2), spec.MQAChunkConfig{MaxGB: &edge}), 0, estX1)},
	}
	prefetch := a25(2)
	prefetch.BsGt1L1PrefetchEnabled = true
	cs = append(cs, Case[estIn]{"prefetch-on", estCase(prefetch, 0, estX1)})
	off := a25(2)
	off.TransferEnabled, off.TransferLayers, off.LogitRowsPerReq = false, math.MaxInt64, 0
	cs = append(cs, Case[estIn]{"transfer-off-huge-layers-no-logits", estCase(off, 0, estX1)})
	cs = append(cs, estimateGroupCases()...)
	cs = append(cs, estimateTwoFailureCases()...)
	for _, cp := range []int64{1, 2, 4, 8} {
		var reqs []spec.EstimateReq
		for _, e := range []int64{1, estPS - 1, estPS, estPS + 1, 2*cp - 1, 2 * cp, 2*cp + 1} {
			reqs = append(reqs, spec.EstimateReq{PrefixLen: estPS - 1, ExtendLen: e})
		}
		cs = append(cs,
			Case[estIn]{fmt.Sprintf("cp%d-boundary-lengths", cp), estCase(a25(cp), 0, reqs...)},
			Case[estIn]{fmt.Sprintf("cp%d-boundary-lengths-rows2", cp), estCase(withChunk(a25(cp), spec.MQAChunkConfig{MaxRows: ptr(int64(2))}), 0, reqs...)},
		)
	}
	return cs
}

func ptr[T any](x T) *T { return &x }

// estimateGroupCases pins A2.4's groups at int64's edge, where every
// summed term fits and a group does not, and the GiB cap of 2^33 (2^63
// bytes, past fast's int64 cap) binding a rank: fast then takes the
// quotient in math/big and it is smaller than Q.
func estimateGroupCases() []Case[estIn] {
	unit := func(ctx spec.EstimatorContext) spec.EstimatorContext { // one byte per row, page, position; no logits, transfer or prefetch
		ctx.PageSize, ctx.MLARowBytes, ctx.IndexRowBytes, ctx.PageDescriptorBytes, ctx.RowRemapBytes = 1, 1, 1, 1, 1
		ctx.LogitRowsPerReq, ctx.TransferEnabled, ctx.BsGt1L1PrefetchEnabled = 0, false, false
		ctx.Chunk = spec.MQAChunkConfig{}
		return ctx
	}
	// Layer-forward peak: mla 3·2^61 and index 2^62 each fit, their sum
	// does not; with prefetch off no earlier group holds it.
	layer := unit(catalog.EstimatorA25Context(1))
	layer.MLARowBytes, layer.IndexRowBytes = 3, 2
	// Per-forward: remap 2^62 (2^61 pages and positions) and the logits
	// window 2^62 (vocab 2^60) each fit, their sum is 2^63.
	perFwd := unit(catalog.EstimatorA25Context(1))
	perFwd.LogitRowsPerReq, perFwd.VocabSize = 1, 1<<60
	// The 2^33 GiB cap: K = Q = 1.6e9 on the one rank, R = 2^63 div 4K =
	// 1,441,151,880 < Q, and the peak R·4K is 54,628,513 bytes short of
	// what would overflow the total with 64Ki-token pages.
	gb := unit(catalog.EstimatorA25Context(1))
	gb.PageSize, gb.Chunk = 1<<16, spec.MQAChunkConfig{MaxGB: ptr(float64(1 << 33))}
	small := unit(catalog.EstimatorA25Context(1))
	small.Chunk = spec.MQAChunkConfig{MaxGB: ptr(float64(1))}
	return []Case[estIn]{
		{"overflow-layer-forward-peak-prefetch-off", estCase(layer, 0, spec.EstimateReq{PrefixLen: 1 << 61})},
		{"overflow-per-forward-terms-fit", estCase(perFwd, 0, spec.EstimateReq{PrefixLen: 1 << 61})},
		{"gb-2^33-cap-binds-exact-quotient", estCase(gb, 0, spec.EstimateReq{ExtendLen: 1_600_000_000})},
		// K past 2^63 / 4 bytes a logit under a 1 GiB cap: one row (the floor),
		// then the remap metadata of 2^62 positions overflows (rejected)
		{"gb-cap-key-count-past-int64-logits", estCase(small, 0, spec.EstimateReq{PrefixLen: 1 << 62, ExtendLen: 1})},
	}
}

// estimateTwoFailureCases are inputs with two independent failures, each
// pair in the order A2.7 checks it (a reach class of issue 30): the
// context before the requests, a prefix before its extend, request 0
// before request 1, and overflowing terms in A2.4's order (mla before
// index, remap before transfer, transfer before logits, rank 0 before
// rank 1). The unit context makes every term its request lengths.
func estimateTwoFailureCases() []Case[estIn] {
	unit := func(cp int64) spec.EstimatorContext {
		ctx := catalog.EstimatorA25Context(cp)
		ctx.PageSize, ctx.MLARowBytes, ctx.IndexRowBytes, ctx.PageDescriptorBytes, ctx.RowRemapBytes = 1, 1, 1, 1, 1
		ctx.LogitRowsPerReq, ctx.TransferEnabled, ctx.BsGt1L1PrefetchEnabled = 0, false, false
		ctx.Chunk = spec.MQAChunkConfig{}
		return ctx
	}
	badPage := unit(1)
	badPage.PageSize = 0
	mlaIndex := unit(1)
	mlaIndex.MLARowBytes, mlaIndex.IndexRowBytes = 8, 8 // rows 2^61: both products 2^64
	remapTransfer := unit(1)
	remapTransfer.RowRemapBytes, remapTransfer.TransferEnabled, remapTransfer.TransferLayers, remapTransfer.DescriptorBytes = 1<<23, true, 1<<23, 1
	// One extend token: 2^62 layers × 4 bytes of descriptors and a 2^62
	// vocabulary × 4 bytes of logits, each 2^64.
	transferLogits := unit(1)
	transferLogits.TransferEnabled, transferLogits.TransferLayers, transferLogits.DescriptorBytes = true, 1<<62, 4
	transferLogits.LogitRowsPerReq, transferLogits.VocabSize = 1, 1<<62
	return []Case[estIn]{
		{"two-failures-page-size-then-negative-prefix", estCase(badPage, 0, spec.EstimateReq{PrefixLen: -1})},
		{"two-failures-negative-prefix-then-extend", estCase(unit(1), 0, spec.EstimateReq{PrefixLen: -1, ExtendLen: -2})},
		{"two-failures-request-0-then-request-1", estCase(unit(1), 0, spec.EstimateReq{ExtendLen: -1}, spec.EstimateReq{PrefixLen: -2})},
		{"two-overflows-mla-then-index", estCase(mlaIndex, 0, spec.EstimateReq{PrefixLen: 1 << 61})},
		{"two-overflows-remap-then-transfer", estCase(remapTransfer, 0, spec.EstimateReq{ExtendLen: 1 << 40})},
		{"two-overflows-transfer-then-logits", estCase(transferLogits, 0, spec.EstimateReq{ExtendLen: 1})},
		{"two-overflows-rank-0-then-rank-1", estCase(unit(2), 0, spec.EstimateReq{ExtendLen: 1 << 33})},
	}
}

// estimateRegressions: A2.8's minimal inputs, named as their mutants.
func estimateRegressions() []Case[estIn] {
	a25 := catalog.EstimatorA25Context
	rows, gb := int64(512), 0.01
	return []Case[estIn]{
		// Fixed: 423,703,552 > 128 MiB, the second request stops; buggy 21,050,368 admitted.
		{"estimate-mqa-term-missing", estCase(a25(2), 128<<20, estX1, estX1)},
		// Fixed: admitted under 512 MiB; buggy 826,356,736 refused.
		{"estimate-full-request-qk", estCase(a25(2), 512<<20, estX1, estX1)},
		// Fixed: a configuration error; buggy runs with the row cap.
		{"estimate-both-caps-row-wins", estCase(withChunk(a25(2), spec.MQAChunkConfig{MaxRows: &rows, MaxGB: &gb}), 0, estX1)},
		// Fixed: rank 1's 800,056; buggy rank 0's 400,028.
		{"estimate-rank0-only", estCase(a25(4), 0, estX4)},
	}
}

// --- properties ---

func bigOf(x int64) *big.Int { return big.NewInt(x) }

// estimateTerms is A2.4 recomputed from the formulas in exact integers:
// every summed term, the groups and the total, and the MQA term as the
// per-rank maximum at its smallest rank.
func estimateTerms(_ spec.Limits, in estIn, out estOut) error {
	c, e := in.Context, out.Estimate
	rows, remap, transfer := new(big.Int), new(big.Int), new(big.Int)
	for _, r := range in.Requests {
		ctxLen := r.PrefixLen + r.ExtendLen
		pages := (ctxLen + c.PageSize - 1) / c.PageSize
		rows.Add(rows, bigOf(pages*c.PageSize))
		remap.Add(remap, bigOf(pages*c.PageDescriptorBytes+ctxLen*c.RowRemapBytes))
		if c.TransferEnabled {
			t := new(big.Int).Mul(bigOf((r.ExtendLen+c.PageSize-1)/c.PageSize), bigOf(c.TransferLayers))
			transfer.Add(transfer, t.Mul(t, bigOf(c.DescriptorBytes)))
		}
	}
	var peak, worst int64
	for _, rk := range e.PerRank {
		if rk.PeakBytes > peak {
			peak, worst = rk.PeakBytes, rk.Rank
		}
	}
	logits := int64(len(in.Requests)) * c.LogitRowsPerReq * c.VocabSize * 4
	want := map[string]int64{
		"mla":       new(big.Int).Mul(rows, bigOf(c.MLARowBytes)).Int64(),
		"index":     new(big.Int).Mul(rows, bigOf(c.IndexRowBytes)).Int64(),
		"remap":     remap.Int64(),
		"transfer":  transfer.Int64(),
		"logits":    logits,
		"mqa":       peak,
		"worstRank": worst,
	}
	got := map[string]int64{
		"mla": e.MLAMaterializeBytes, "index": e.IndexMaterializeBytes, "remap": e.RemapMetadataBytes,
		"transfer": e.TransferDescriptorBytes, "logits": e.LogitsWindowBytes, "mqa": e.MQALogitsPeakBytes, "worstRank": e.WorstRank,
	}
	for _, k := range []string{"mla", "index", "remap", "transfer", "logits", "mqa", "worstRank"} {
		if got[k] != want[k] {
			return fmt.Errorf("%s = %d, want %d", k, got[k], want[k])
		}
	}
	dense := e.MLAMaterializeBytes + e.IndexMaterializeBytes
	wantPrefetch := int64(0)
	if c.BsGt1L1PrefetchEnabled {
		wantPrefetch = dense
	}
	switch {
	case e.PrefetchBytes != wantPrefetch:
		return fmt.Errorf("prefetch = %d, want %d", e.PrefetchBytes, wantPrefetch)
	case e.LayerForwardPeakBytes != dense+e.MQALogitsPeakBytes:
		return fmt.Errorf("layer-forward peak %d != mla + index + mqa = %d", e.LayerForwardPeakBytes, dense+e.MQALogitsPeakBytes)
	case e.PerForwardBytes != e.RemapMetadataBytes+e.TransferDescriptorBytes+e.LogitsWindowBytes:
		return fmt.Errorf("per-forward %d != remap + transfer + logits", e.PerForwardBytes)
	case e.TotalBytes != e.PerForwardBytes+e.LayerForwardPeakBytes+e.PrefetchBytes:
		return fmt.Errorf("total %d != per-forward + layer peak + prefetch", e.TotalBytes)
	}
	return nil
}

// estimateRanks is A2.3 with invariant 5, recomputed token by token: each
// request's extend is dealt into 2c segments of b or b+1 tokens (longer
// first, checked), token t of segment j is a query row of rank owner(j),
// and each rank's K is the prefix plus the end of its later segment. The
// chunk rows follow A2.3's rule; Σ_r Q_r = Σ E_i.
func estimateRanks(_ spec.Limits, in estIn, out estOut) error {
	c := in.Context.CPSize
	if int64(len(out.Estimate.PerRank)) != c {
		return fmt.Errorf("%d ranks, want cp_size %d", len(out.Estimate.PerRank), c)
	}
	q, k := make([]int64, c), make([]int64, c)
	var sumE, sumQ int64
	for i, r := range in.Requests {
		lens := ref.EstimatorSplit(int(c), r.ExtendLen).S[0]
		b, total := r.ExtendLen/(2*c), int64(0)
		for j, l := range lens {
			if int64(l) != b && int64(l) != b+1 || (j > 0 && l > lens[j-1]) {
				return fmt.Errorf("request %d: segment %d has %d tokens, want %d or %d, longer first (%v)", i, j, l, b, b+1, lens)
			}
			total += int64(l)
		}
		if total != r.ExtendLen {
			return fmt.Errorf("request %d: segments cover %d of %d tokens", i, total, r.ExtendLen)
		}
		for rk := range c {
			later := 2*c - 1 - rk
			q[rk] += int64(lens[rk] + lens[later])
			end := int64(0)
			for _, l := range lens[:later+1] {
				end += int64(l)
			}
			k[rk] += r.PrefixLen + end
		}
		sumE += r.ExtendLen
	}
	for rk, got := range out.Estimate.PerRank {
		want := spec.RankMQA{Rank: int64(rk), QRows: q[rk], KRows: k[rk], ChunkRows: chunkRowsRule(q[rk], k[rk], in.Context.Chunk)}
		want.PeakBytes = want.ChunkRows * want.KRows * 4
		if got != want {
			return fmt.Errorf("rank %d: %+v, want %+v", rk, got, want)
		}
		sumQ += got.QRows
	}
	if sumQ != sumE {
		return fmt.Errorf("the ranks hold %d query rows (Σ Q_r), want Σ E_i = %d", sumQ, sumE)
	}
	return nil
}

// chunkRowsRule is A2.3's R in floating-point-free terms: Q without a
// cap, min(Q, n), or the largest R in [1, Q] with R·4K <= int(g·2^30)
// (1 when even one row is over).
func chunkRowsRule(q, k int64, c spec.MQAChunkConfig) int64 {
	switch {
	case q == 0:
		return 0
	case c.MaxRows != nil:
		return min(q, *c.MaxRows)
	case c.MaxGB == nil:
		return q
	}
	capB := ref.GBCapExact(*c.MaxGB)
	fits := func(r int64) bool {
		b := new(big.Int).Mul(bigOf(r), bigOf(k))
		return b.Mul(b, bigOf(4)).Cmp(capB) <= 0
	}
	if fits(q) {
		return q
	}
	lo, hi := int64(1), q // fits(hi) is false; find the largest fitting r, at least 1
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// estimateRerun is ref on a changed input, or ok=false where that input
// is rejected (an overflow the perturbation caused).
func estimateRerun(lim spec.Limits, in estIn) (spec.Estimate, bool) {
	out, err := ref.AdmissionEstimate(lim, in)
	return out.Estimate, err == nil
}

func cloneEst(in estIn) estIn {
	in.Requests = append([]spec.EstimateReq{}, in.Requests...)
	return in
}

// estimateMonotone is invariant 1: without a GiB cap, adding a request or
// growing any P or E never lowers the total (a GiB cap is exempt: a larger
// K can drop a chunk row).
func estimateMonotone(lim spec.Limits, in estIn, out estOut) error {
	if in.Context.Chunk.MaxGB != nil {
		return nil
	}
	total := out.Estimate.TotalBytes
	check := func(what string, x estIn) error {
		if e, ok := estimateRerun(lim, x); ok && e.TotalBytes < total {
			return fmt.Errorf("%s lowered the total from %d to %d", what, total, e.TotalBytes)
		}
		return nil
	}
	grown := cloneEst(in)
	grown.Requests = append(grown.Requests, spec.EstimateReq{PrefixLen: 1, ExtendLen: 1})
	if err := check("adding a request", grown); err != nil {
		return err
	}
	for i := range min(len(in.Requests), 3) {
		for _, f := range []struct {
			what string
			bump func(*spec.EstimateReq)
		}{{"P+1", func(r *spec.EstimateReq) { r.PrefixLen++ }}, {"E+1", func(r *spec.EstimateReq) { r.ExtendLen++ }}} {
			x := cloneEst(in)
			f.bump(&x.Requests[i])
			if err := check(fmt.Sprintf("request %d %s", i, f.what), x); err != nil {
				return err
			}
		}
	}
	return nil
}

// estimateFullProduct is invariant 2: the CP-aware peak is at most the
// full-request product (Σ E)(Σ (P+E))·4, with equality at c = 1 and no cap.
func estimateFullProduct(_ spec.Limits, in estIn, out estOut) error {
	sumE, sumCtx := new(big.Int), new(big.Int)
	for _, r := range in.Requests {
		sumE.Add(sumE, bigOf(r.ExtendLen))
		sumCtx.Add(sumCtx, bigOf(r.PrefixLen+r.ExtendLen))
	}
	full := new(big.Int).Mul(sumE, sumCtx)
	full.Mul(full, bigOf(4))
	peak := bigOf(out.Estimate.MQALogitsPeakBytes)
	if peak.Cmp(full) > 0 {
		return fmt.Errorf("peak %v over the full-request product %v", peak, full)
	}
	noCap := in.Context.Chunk.MaxRows == nil && in.Context.Chunk.MaxGB == nil
	if in.Context.CPSize == 1 && noCap && peak.Cmp(full) != 0 {
		return fmt.Errorf("c = 1 without a cap: peak %v != full-request product %v", peak, full)
	}
	return nil
}

// estimateRowCap is invariant 3: a row cap never raises the peak, and the
// peak does not fall as the cap grows (n against n+1, and caps 1 ≤ 2 ≤
// none on uncapped inputs).
func estimateRowCap(lim spec.Limits, in estIn, out estOut) error {
	if in.Context.Chunk.MaxGB != nil {
		return nil
	}
	peakWith := func(c spec.MQAChunkConfig) (int64, bool) {
		x := cloneEst(in)
		x.Context.Chunk = c
		e, ok := estimateRerun(lim, x)
		return e.MQALogitsPeakBytes, ok
	}
	got := out.Estimate.MQALogitsPeakBytes
	if n := in.Context.Chunk.MaxRows; n != nil {
		if free, ok := peakWith(spec.MQAChunkConfig{}); ok && got > free {
			return fmt.Errorf("row cap %d raised the peak: %d > uncapped %d", *n, got, free)
		}
		if *n < math.MaxInt64 {
			if next, ok := peakWith(spec.MQAChunkConfig{MaxRows: ptr(*n + 1)}); ok && next < got {
				return fmt.Errorf("row cap %d → %d lowered the peak %d → %d", *n, *n+1, got, next)
			}
		}
		return nil
	}
	one, ok1 := peakWith(spec.MQAChunkConfig{MaxRows: ptr(int64(1))})
	two, ok2 := peakWith(spec.MQAChunkConfig{MaxRows: ptr(int64(2))})
	if ok1 && ok2 && (one > two || two > got) {
		return fmt.Errorf("peaks under caps 1, 2, none = %d, %d, %d: not non-decreasing", one, two, got)
	}
	return nil
}

// estimateGBCap is invariant 4: under a GiB cap every rank's peak is at
// most max(int(g·2^30), 4·K_r), and a rank cut short could not take one
// more row under the cap.
func estimateGBCap(_ spec.Limits, in estIn, out estOut) error {
	if in.Context.Chunk.MaxGB == nil {
		return nil
	}
	capB := ref.GBCapExact(*in.Context.Chunk.MaxGB)
	for _, rk := range out.Estimate.PerRank {
		row := new(big.Int).Mul(bigOf(rk.KRows), bigOf(4))
		bound := capB
		if row.Cmp(bound) > 0 {
			bound = row
		}
		if bigOf(rk.PeakBytes).Cmp(bound) > 0 {
			return fmt.Errorf("rank %d: peak %d over max(cap %v, 4K %v)", rk.Rank, rk.PeakBytes, capB, row)
		}
		if rk.ChunkRows < rk.QRows && new(big.Int).Add(bigOf(rk.PeakBytes), row).Cmp(capB) <= 0 {
			return fmt.Errorf("rank %d: %d of %d rows leave room for another under %v", rk.Rank, rk.ChunkRows, rk.QRows, capB)
		}
	}
	return nil
}

// estimatePure is invariant 6: the reference gives byte-identical
// encodings on repeated runs, equal to the result under test.
func estimatePure(lim spec.Limits, in estIn, out estOut) error {
	a, errA := ref.AdmissionEstimate(lim, in)
	b, errB := ref.AdmissionEstimate(lim, in)
	ca, cb, co := catalog.Canonical(a, errA), catalog.Canonical(b, errB), catalog.Canonical(out, nil)
	if !bytes.Equal(ca, cb) || !bytes.Equal(ca, co) {
		return fmt.Errorf("encodings differ:\n%s\n%s\n%s", ca, cb, co)
	}
	return nil
}

// estimateGate is A1.9 C5: with a limit the last request joins unless the
// batch has two or more requests and its total exceeds the limit; a single
// request over the limit is admitted alone and flagged. No limit, no gate.
func estimateGate(_ spec.Limits, in estIn, out estOut) error {
	if in.MaxBufferSizeBytes == nil {
		if out.Gate != nil {
			return fmt.Errorf("gate %+v without a limit", *out.Gate)
		}
		return nil
	}
	if out.Gate == nil {
		return fmt.Errorf("no gate with limit %d", *in.MaxBufferSizeBytes)
	}
	g, m, n, total := *out.Gate, *in.MaxBufferSizeBytes, len(in.Requests), out.Estimate.TotalBytes
	over := total > m
	want := spec.BufferGate{MaxBufferSizeBytes: m, Admit: n <= 1 || !over, AloneOverLimit: n == 1 && over}
	if !want.Admit {
		want.Detail = spec.BufferGateDetail
	}
	if g != want {
		return fmt.Errorf("gate %+v, want %+v (total %d, %d requests)", g, want, total, n)
	}
	return nil
}

package ref

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// This file is admission.estimate (docs/spec/admission-serving.md A2): the CPU-only
// bound on the temporary GPU memory one CP shared-KV bs>1 prefill forward
// needs beyond the KV pool, and the --cp-shared-kv-prefill-max-buffer-size
// gate (A1.9 C5) that admits or stops a batch on it. The reference
// computes every term in exact integers (math/big) and only then asks
// whether each fits int64, so it can neither wrap nor report an overflow
// that the exact value does not have; the fast twin uses checked int64.

// A2.2's defaults and the constants of A2.3/A1.9.
const (
	// defaultMLARowBytes is one materialized fp8_e4m3 MLA KV row.
	defaultMLARowBytes = 656
	// defaultIndexRowBytes is one NSA index-K row: 128 fp8 + a 4-byte fp32 scale.
	defaultIndexRowBytes = 132
	// defaultVocabSize is the vocabulary of A2.5's worked examples.
	defaultVocabSize = 154880
	// defaultLogitRowsPerReq is last-token logits.
	defaultLogitRowsPerReq = 1
	// defaultDescriptorBytes is one transfer descriptor: src, dst, length.
	defaultDescriptorBytes = 24
	// defaultPageDescriptorBytes is one row-scoped sorted page descriptor.
	defaultPageDescriptorBytes = 16
	// defaultRowRemapBytes is an int32 flattened loc plus an int32 row id.
	defaultRowRemapBytes = 8
	// rankMQABytes is the encoded size bound of one RankMQA (five int64s),
	// for lim.CheckOutput on the cp_size-long per_rank list.
	rankMQABytes = 5 * 8
)

// The two environment knobs of A2.2, named in errors.
const (
	envMQAChunkMaxRows = "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS"
	envMQAChunkMaxGB   = "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_GB"
)

// DefaultEstimatorContext is A2.2's defaults for a page size and CP size:
// 656/132-byte rows, last-token logits over A2.5's vocabulary, 24/16/8-byte
// descriptors, no chunk cap, transfer and L1 prefetch off.
func DefaultEstimatorContext(pageSize, cpSize int64) spec.EstimatorContext {
	return spec.EstimatorContext{
		PageSize: pageSize, CPSize: cpSize,
		MLARowBytes: defaultMLARowBytes, IndexRowBytes: defaultIndexRowBytes,
		VocabSize: defaultVocabSize, LogitRowsPerReq: defaultLogitRowsPerReq,
		DescriptorBytes: defaultDescriptorBytes, PageDescriptorBytes: defaultPageDescriptorBytes,
		RowRemapBytes: defaultRowRemapBytes,
	}
}

// parseEstimatorChunkEnv reads the two A2.2 environment values once, up
// front (A2.6 invariant 6). An empty or whitespace-only value is unset;
// others are trimmed of surrounding whitespace, as Python's int() and
// float() do, then parsed as a decimal integer and a float. Errors name the
// variable and quote its value.
func parseEstimatorChunkEnv(maxRows, maxGB string) (spec.MQAChunkConfig, error) {
	var c spec.MQAChunkConfig
	rows, gb := strings.TrimSpace(maxRows), strings.TrimSpace(maxGB)
	if rows != "" && gb != "" {
		return c, spec.Reject(spec.ErrConfig, envMQAChunkMaxRows, rows,
			envMQAChunkMaxRows+" and "+envMQAChunkMaxGB+" are mutually exclusive; set one")
	}
	if rows != "" {
		n, err := strconv.ParseInt(rows, 10, 64)
		if err != nil || n < 1 {
			return spec.MQAChunkConfig{}, spec.Reject(spec.ErrConfig, envMQAChunkMaxRows, strconv.Quote(maxRows), "an integer >= 1")
		}
		c.MaxRows = &n
	}
	if gb != "" {
		g, err := strconv.ParseFloat(gb, 64)
		if (err != nil && !isRangeErr(err)) || math.IsNaN(g) || math.IsInf(g, 0) || g <= 0 {
			return spec.MQAChunkConfig{}, spec.Reject(spec.ErrConfig, envMQAChunkMaxGB, strconv.Quote(maxGB), "a positive finite number")
		}
		if g < 1.0/(1<<30) {
			return spec.MQAChunkConfig{}, spec.Reject(spec.ErrConfig, envMQAChunkMaxGB, strconv.Quote(maxGB), "int(g·2^30) >= 1 byte (too small)")
		}
		c.MaxGB = &g
	}
	return c, nil
}

// isRangeErr reports a ParseFloat range error, whose result (±Inf or a
// rounded-to-zero value) the caller then judges by value.
func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// EstimateOverflow is the error of a term whose exact value exceeds int64
// (A2.7): the field names the term, the value its operands (for the MQA
// term the rank's rows, which always fit), the bound int64's maximum.
// Both twins build it from the same arguments.
func EstimateOverflow(term, operands string) error {
	return spec.Reject(spec.ErrOverflow, "estimate."+term, operands, fmt.Sprintf("<= %d (int64); overflow computing %s", int64(math.MaxInt64), term))
}

// MQAOverflowOperands is the MQA term's operands for rank r.
func MQAOverflowOperands(r, q, k, rows int64) string {
	return fmt.Sprintf("rank %d: chunk_rows=%d × k_rows=%d × 4 (q_rows=%d)", r, rows, k, q)
}

// EstimatorSplit is request e's zigzag split for CP size c as a one-request
// Layout (A2.3, docs/spec/cp-layout.md §1.2): 2c segments, the first e mod 2c one
// token longer. It is BuildLayoutUnpadded's rule without that builder's
// preconditions (c >= 2, e >= 2c), which the estimator does not have: c = 1
// is the non-CP shape, and a short extend leaves its last segments empty.
// Preconditions: 1 <= c <= MaxCP, e >= 0.
func EstimatorSplit(c int, e int64) spec.Layout {
	ns := int64(2 * c)
	lay := spec.Layout{CP: c, L: []int{int(e)}, S: [][]int{make([]int, ns)}, V: [][]int{make([]int, ns)}}
	q, m := e/ns, e%ns
	for k := range ns {
		lay.S[0][k] = int(q)
		if k < m {
			lay.S[0][k]++
		}
		lay.V[0][k] = lay.S[0][k]
	}
	return lay
}

// EstimateBuffers is A2's estimator: validates ctx and reqs, then computes
// every A2.4 term of the batch. Terms are exact; the first (in A2.4's
// order, MQA ranks ascending) whose value exceeds int64 is an ErrOverflow.
func EstimateBuffers(ctx spec.EstimatorContext, reqs []spec.EstimateReq) (spec.Estimate, error) {
	if err := CheckEstimatorContext(ctx); err != nil {
		return spec.Estimate{}, err
	}
	if err := CheckEstimateReqs(reqs); err != nil {
		return spec.Estimate{}, err
	}
	return estimateExact(ctx, reqs)
}

// AdmissionEstimate is admission.estimate (A2, A1.9 C5): the estimate of
// the batch and, with a limit, the gate's decision on its last request.
func AdmissionEstimate(lim spec.Limits, in spec.AdmissionEstimateInput) (spec.AdmissionEstimateOutput, error) {
	if err := ValidateAdmissionEstimate(lim, in); err != nil {
		return spec.AdmissionEstimateOutput{}, err
	}
	est, err := estimateExact(in.Context, in.Requests)
	if err != nil {
		return spec.AdmissionEstimateOutput{}, err
	}
	out := spec.AdmissionEstimateOutput{Estimate: est}
	if in.MaxBufferSizeBytes != nil {
		g := GateOn(est.TotalBytes, len(in.Requests), *in.MaxBufferSizeBytes)
		out.Gate = &g
	}
	return out, nil
}

// GateOn is the max-buffer-size gate (A1.9 C5) for a batch of n requests
// whose estimate is total: the last request joins unless it is not alone
// (n >= 2) and total exceeds maxBytes. A single request over the limit is
// admitted alone and flagged.
func GateOn(total int64, n int, maxBytes int64) spec.BufferGate {
	over := total > maxBytes
	g := spec.BufferGate{MaxBufferSizeBytes: maxBytes, Admit: !over || n <= 1, AloneOverLimit: over && n == 1}
	if !g.Admit {
		g.Detail = spec.BufferGateDetail
	}
	return g
}

// exact is an int64 check on a big integer: v's value, or an overflow
// error naming term.
func exact(v *big.Int, term, operands string) (int64, error) {
	if !v.IsInt64() {
		return 0, EstimateOverflow(term, operands)
	}
	return v.Int64(), nil
}

func bi(x int64) *big.Int { return big.NewInt(x) }

// estimateExact computes A2.4 term by term in exact arithmetic, checking
// each result against int64 in the order the terms are listed.
func estimateExact(ctx spec.EstimatorContext, reqs []spec.EstimateReq) (spec.Estimate, error) {
	ps := bi(ctx.PageSize)
	rows, remap, transfer := new(big.Int), new(big.Int), new(big.Int)
	for _, r := range reqs {
		ctxLen := new(big.Int).Add(bi(r.PrefixLen), bi(r.ExtendLen))
		pages := ceilDiv(ctxLen, ps)
		rows.Add(rows, new(big.Int).Mul(pages, ps))
		remap.Add(remap, new(big.Int).Mul(pages, bi(ctx.PageDescriptorBytes)))
		remap.Add(remap, new(big.Int).Mul(ctxLen, bi(ctx.RowRemapBytes)))
		if ctx.TransferEnabled {
			t := ceilDiv(bi(r.ExtendLen), ps)
			t.Mul(t, bi(ctx.TransferLayers))
			transfer.Add(transfer, t.Mul(t, bi(ctx.DescriptorBytes)))
		}
	}
	var est spec.Estimate
	var err error
	if _, err = exact(rows, "rows", spec.OperandsRows); err != nil {
		return spec.Estimate{}, err
	}
	mla := new(big.Int).Mul(rows, bi(ctx.MLARowBytes))
	index := new(big.Int).Mul(rows, bi(ctx.IndexRowBytes))
	logits := new(big.Int).Mul(bi(int64(len(reqs))), bi(ctx.LogitRowsPerReq))
	logits.Mul(logits, bi(ctx.VocabSize))
	logits.Mul(logits, bi(spec.MQALogitsElemBytes))
	for _, t := range []struct {
		dst      *int64
		v        *big.Int
		term, op string
	}{
		{&est.MLAMaterializeBytes, mla, "mla_materialize_bytes", spec.OperandsMLA},
		{&est.IndexMaterializeBytes, index, "index_materialize_bytes", spec.OperandsIndex},
		{&est.RemapMetadataBytes, remap, "remap_metadata_bytes", spec.OperandsRemap},
		{&est.TransferDescriptorBytes, transfer, "transfer_descriptor_bytes", spec.OperandsTransfer},
		{&est.LogitsWindowBytes, logits, "logits_window_bytes", spec.OperandsLogits},
	} {
		if *t.dst, err = exact(t.v, t.term, t.op); err != nil {
			return spec.Estimate{}, err
		}
	}
	if est.PerRank, err = mqaRanks(ctx, reqs); err != nil {
		return spec.Estimate{}, err
	}
	for _, rk := range est.PerRank {
		if rk.PeakBytes > est.MQALogitsPeakBytes {
			est.MQALogitsPeakBytes, est.WorstRank = rk.PeakBytes, rk.Rank
		}
	}
	return sumTerms(ctx, est)
}

// sumTerms fills the three groups and the total of A2.4, exactly.
func sumTerms(ctx spec.EstimatorContext, est spec.Estimate) (spec.Estimate, error) {
	dense := new(big.Int).Add(bi(est.MLAMaterializeBytes), bi(est.IndexMaterializeBytes))
	prefetch := new(big.Int)
	if ctx.BsGt1L1PrefetchEnabled {
		prefetch.Set(dense)
	}
	layer := new(big.Int).Add(dense, bi(est.MQALogitsPeakBytes))
	perFwd := new(big.Int).Add(bi(est.RemapMetadataBytes), bi(est.TransferDescriptorBytes))
	perFwd.Add(perFwd, bi(est.LogitsWindowBytes))
	total := new(big.Int).Add(perFwd, layer)
	total.Add(total, prefetch)
	var err error
	for _, t := range []struct {
		dst      *int64
		v        *big.Int
		term, op string
	}{
		{&est.PrefetchBytes, prefetch, "prefetch_bytes", spec.OperandsPrefetch},
		{&est.LayerForwardPeakBytes, layer, "layer_forward_peak_bytes", spec.OperandsLayerPeak},
		{&est.PerForwardBytes, perFwd, "per_forward_bytes", spec.OperandsPerFwd},
		{&est.TotalBytes, total, "total_bytes", spec.OperandsTotal},
	} {
		if *t.dst, err = exact(t.v, t.term, t.op); err != nil {
			return spec.Estimate{}, err
		}
	}
	return est, nil
}

// mqaRanks is A2.3 for every rank: each request's zigzag split adds its
// segments r and 2c−1−r to Q_r, and its prefix plus the end of segment
// 2c−1−r (the later one) to K_r; the chunk rows follow the cap. The
// caller has checked rows, which bounds every Q_r and K_r.
func mqaRanks(ctx spec.EstimatorContext, reqs []spec.EstimateReq) ([]spec.RankMQA, error) {
	c := int(ctx.CPSize)
	q, k := make([]int64, c), make([]int64, c)
	for _, rq := range reqs {
		lay := EstimatorSplit(c, rq.ExtendLen)
		for r := range c {
			m := lay.Mirror(r)
			q[r] += int64(lay.S[0][r] + lay.S[0][m])
			k[r] += rq.PrefixLen + int64(lay.SegStart(0, m)+lay.S[0][m])
		}
	}
	ranks := make([]spec.RankMQA, c)
	for r := range c {
		rows := estimatorChunkRows(q[r], k[r], ctx.Chunk)
		peak := new(big.Int).Mul(bi(rows), bi(k[r]))
		p, err := exact(peak.Mul(peak, bi(spec.MQALogitsElemBytes)), "mqa_logits_peak_bytes", MQAOverflowOperands(int64(r), q[r], k[r], rows))
		if err != nil {
			return nil, err
		}
		ranks[r] = spec.RankMQA{Rank: int64(r), QRows: q[r], KRows: k[r], ChunkRows: rows, PeakBytes: p}
	}
	return ranks, nil
}

// estimatorChunkRows is A2.3's R for Q query and K context rows: Q without
// a cap (the estimator stays conservative), min(Q, n) under a row cap,
// min(Q, max(1, cap/(4K))) under a GiB cap with cap = int(g·2^30), taken
// exactly (Python's int() of the float product, which can exceed int64).
// No query rows means no chunk.
func estimatorChunkRows(q, k int64, c spec.MQAChunkConfig) int64 {
	switch {
	case q == 0:
		return 0
	case c.MaxRows != nil:
		return min(q, *c.MaxRows)
	case c.MaxGB != nil:
		capB := GBCapExact(*c.MaxGB)
		per := new(big.Int).Quo(capB, new(big.Int).Mul(bi(k), bi(spec.MQALogitsElemBytes)))
		if per.Cmp(bi(q)) >= 0 {
			return q
		}
		return max(1, per.Int64())
	}
	return q
}

// GBCapExact is int(g·2^30) for a positive finite g as an exact integer:
// the float product by 2^30 is exact, and truncating it is Python's int().
func GBCapExact(g float64) *big.Int {
	f := new(big.Float).SetFloat64(g)
	f.SetMantExp(f, 30)
	n, _ := f.Int(nil)
	return n
}

// ceilDiv is ceil(a/b) for a >= 0, b >= 1.
func ceilDiv(a, b *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(a, b, new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

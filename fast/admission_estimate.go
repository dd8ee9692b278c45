package fast

import (
	"math"
	"math/big"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionEstimate is the twin of ref.AdmissionEstimate
// (docs/spec/admission-serving.md A2, A1.9 C5). The reference computes every term in
// math/big; this one keeps checked int64 sums with a sticky overflow flag
// per term, walks each request once (the zigzag segment of every rank in
// closed form, no layout allocation), and reports the first overflowing
// term in the reference's order, so the errors are the same bytes.
func AdmissionEstimate(lim spec.Limits, in spec.AdmissionEstimateInput) (spec.AdmissionEstimateOutput, error) {
	return admissionEstimateWithFaults(lim, in, fault.Estimate{})
}

// admissionEstimateWithFaults is AdmissionEstimate with the historic bugs f
// selects put back, for the bug zoo only: fault.Hooks hands it to
// equiv/mutants (hooks.go). Called with the zero value it is
// AdmissionEstimate.
func admissionEstimateWithFaults(lim spec.Limits, in spec.AdmissionEstimateInput, f fault.Estimate) (spec.AdmissionEstimateOutput, error) {
	if err := ref.ValidateAdmissionEstimate(lim, in); err != nil {
		return spec.AdmissionEstimateOutput{}, err
	}
	e := newEstimator(in.Context, f)
	for _, r := range in.Requests {
		e.add(r)
	}
	est, err := e.build(nil, true)
	if err != nil {
		return spec.AdmissionEstimateOutput{}, err
	}
	out := spec.AdmissionEstimateOutput{Estimate: est}
	if in.MaxBufferSizeBytes != nil {
		g := ref.GateOn(est.TotalBytes, len(in.Requests), *in.MaxBufferSizeBytes)
		out.Gate = &g
	}
	return out, nil
}

// EstimateBuffers is the twin of ref.EstimateBuffers.
func EstimateBuffers(ctx spec.EstimatorContext, reqs []spec.EstimateReq) (spec.Estimate, error) {
	if err := ref.CheckEstimatorContext(ctx); err != nil {
		return spec.Estimate{}, err
	}
	if err := ref.CheckEstimateReqs(reqs); err != nil {
		return spec.Estimate{}, err
	}
	e := newEstimator(ctx, fault.Estimate{})
	for _, r := range reqs {
		e.add(r)
	}
	return e.build(nil, true)
}

// BufferEstimator is the estimator kept incrementally over a growing batch,
// for the admission hot path (A1.9 C5 asks for Estimate(batch ∪
// {candidate}) per candidate): Add commits a request in O(cp_size), With
// and TotalWith price a candidate against the committed batch without
// changing it. Every result and error equals ref.EstimateBuffers on the
// committed requests (plus the candidate). Not safe for concurrent use.
type BufferEstimator struct{ e *estimator }

// NewBufferEstimator validates ctx (ref.CheckEstimatorContext) and
// returns an estimator over an empty batch.
func NewBufferEstimator(ctx spec.EstimatorContext) (*BufferEstimator, error) {
	if err := ref.CheckEstimatorContext(ctx); err != nil {
		return nil, err
	}
	return &BufferEstimator{newEstimator(ctx, fault.Estimate{})}, nil
}

// Len is the number of committed requests.
func (b *BufferEstimator) Len() int { return b.e.n }

// Add commits r as the next request. A negative length is rejected (named
// requests[Len()]) and leaves the estimator unchanged; an overflow is not
// an Add error but the error of every later estimate, as in the reference.
func (b *BufferEstimator) Add(r spec.EstimateReq) error {
	if err := b.e.check(r); err != nil {
		return err
	}
	b.e.add(r)
	return nil
}

// Estimate is the estimate of the committed batch.
func (b *BufferEstimator) Estimate() (spec.Estimate, error) { return b.e.build(nil, true) }

// With is the estimate of the committed batch plus r; the estimator is unchanged.
func (b *BufferEstimator) With(r spec.EstimateReq) (spec.Estimate, error) {
	if err := b.e.check(r); err != nil {
		return spec.Estimate{}, err
	}
	return b.e.build(&r, true)
}

// TotalWith is With(r).TotalBytes without building the per-rank list
// (no allocation); errors are With's.
func (b *BufferEstimator) TotalWith(r spec.EstimateReq) (int64, error) {
	if err := b.e.check(r); err != nil {
		return 0, err
	}
	est, err := b.e.build(&r, false)
	return est.TotalBytes, err
}

// Reset empties the batch, keeping the context.
func (b *BufferEstimator) Reset() { b.e.reset() }

// acc is a non-negative int64 sum with a sticky flag for an exact value
// past MaxInt64.
type acc struct {
	v    int64
	over bool
}

// plus is a + x, where !ok means x itself already overflowed.
func (a acc) plus(x int64, ok bool) acc {
	if a.over || !ok || x > math.MaxInt64-a.v {
		return acc{over: true}
	}
	return acc{v: a.v + x}
}

// mul is a·b for non-negative a, b, with ok false on overflow.
func mul(a, b int64) (int64, bool) {
	if spec.MulOverflows(a, b) {
		return 0, false
	}
	return a * b, true
}

// estimator holds the batch's running sums: the three per-request terms
// and every rank's Q_r and K_r (saturating: they are bounded by rows, whose
// overflow is reported first).
type estimator struct {
	ctx                   spec.EstimatorContext
	f                     fault.Estimate
	n                     int
	rows, remap, transfer acc
	q, k                  []int64
	sumE, sumCtx          int64 // saturating, for A2-B2's full-request rows
	capB                  int64 // int(g·2^30) of a GiB cap below 2^63 bytes, else -1
}

func newEstimator(ctx spec.EstimatorContext, f fault.Estimate) *estimator {
	e := &estimator{ctx: ctx, f: f, q: make([]int64, ctx.CPSize), k: make([]int64, ctx.CPSize), capB: -1}
	if g := ctx.Chunk.MaxGB; g != nil && *g*(1<<30) < 1<<63 {
		e.capB = int64(*g * (1 << 30))
	}
	return e
}

func (e *estimator) reset() {
	*e = estimator{ctx: e.ctx, f: e.f, q: e.q, k: e.k, capB: e.capB}
	clear(e.q)
	clear(e.k)
}

// check rejects r as the request at index n, as ref.CheckEstimateReqs would.
func (e *estimator) check(r spec.EstimateReq) error {
	return ref.CheckEstimateReq(e.n, r)
}

// reqTerms is one request's contribution to rows, remap and transfer.
func (e *estimator) reqTerms(r spec.EstimateReq) (rows, remap, transfer acc) {
	ps := e.ctx.PageSize
	ctxLen, ok := r.PrefixLen+r.ExtendLen, r.PrefixLen <= math.MaxInt64-r.ExtendLen
	if !ok {
		return acc{over: true}, acc{over: true}, acc{}
	}
	pages := ctxLen / ps
	if ctxLen%ps != 0 {
		pages++
	}
	rows = rows.plus(mul(pages, ps))
	remap = remap.plus(mul(pages, e.ctx.PageDescriptorBytes))
	remap = remap.plus(mul(ctxLen, e.ctx.RowRemapBytes))
	if e.ctx.TransferEnabled {
		ext := r.ExtendLen / ps
		if r.ExtendLen%ps != 0 {
			ext++
		}
		t, ok := mul(ext, e.ctx.TransferLayers)
		if ok {
			t, ok = mul(t, e.ctx.DescriptorBytes)
		}
		transfer = transfer.plus(t, ok)
	}
	return rows, remap, transfer
}

// add commits r (already checked).
func (e *estimator) add(r spec.EstimateReq) {
	rows, remap, transfer := e.reqTerms(r)
	e.rows = e.rows.plus(rows.v, !rows.over)
	e.remap = e.remap.plus(remap.v, !remap.over)
	e.transfer = e.transfer.plus(transfer.v, !transfer.over)
	c := int(e.ctx.CPSize)
	z := split(c, r)
	for rk := range c {
		dq, dk := z.share(rk)
		e.q[rk] = addSat(e.q[rk], dq)
		e.k[rk] = addSat(e.k[rk], dk)
	}
	e.sumE = addSat(e.sumE, r.ExtendLen)
	e.sumCtx = addSat(e.sumCtx, addSat(r.PrefixLen, r.ExtendLen))
	e.n++
}

// zigzag is one request's split over 2c segments in closed form (A2.3):
// with b = E/(2c) and m = E mod 2c, segment j has b + [j < m] rows and
// ends at (j+1)·b + min(j+1, m).
type zigzag struct{ ns, b, m, prefix int64 }

func split(c int, r spec.EstimateReq) zigzag {
	ns := int64(2 * c)
	return zigzag{ns: ns, b: r.ExtendLen / ns, m: r.ExtendLen % ns, prefix: r.PrefixLen}
}

// share is the request's share of rank rk's matrix: segments rk and
// 2c−1−rk as query rows, and the prefix plus the end of the later one as
// context rows.
func (z zigzag) share(rk int) (dq, dk int64) {
	j, mirror := int64(rk), z.ns-1-int64(rk)
	dq = 2 * z.b
	if j < z.m {
		dq++
	}
	if mirror < z.m {
		dq++
	}
	end := (mirror+1)*z.b + min(mirror+1, z.m) // <= E: no overflow
	return dq, addSat(z.prefix, end)
}

// build is the estimate of the committed batch plus extra (if any), with
// the per-rank list when perRank is set; overflow checks run in the
// reference's term order.
func (e *estimator) build(extra *spec.EstimateReq, perRank bool) (spec.Estimate, error) {
	n, rows, remap, transfer := e.n, e.rows, e.remap, e.transfer
	sumE, sumCtx := e.sumE, e.sumCtx
	if extra != nil {
		xr, xm, xt := e.reqTerms(*extra)
		rows, remap, transfer = rows.plus(xr.v, !xr.over), remap.plus(xm.v, !xm.over), transfer.plus(xt.v, !xt.over)
		sumE, sumCtx = addSat(sumE, extra.ExtendLen), addSat(sumCtx, addSat(extra.PrefixLen, extra.ExtendLen))
		n++
	}
	if rows.over {
		return spec.Estimate{}, ref.EstimateOverflow("rows", spec.OperandsRows)
	}
	var est spec.Estimate
	var ok bool
	if est.MLAMaterializeBytes, ok = mul(rows.v, e.ctx.MLARowBytes); !ok {
		return spec.Estimate{}, ref.EstimateOverflow("mla_materialize_bytes", spec.OperandsMLA)
	}
	if est.IndexMaterializeBytes, ok = mul(rows.v, e.ctx.IndexRowBytes); !ok {
		return spec.Estimate{}, ref.EstimateOverflow("index_materialize_bytes", spec.OperandsIndex)
	}
	if remap.over {
		return spec.Estimate{}, ref.EstimateOverflow("remap_metadata_bytes", spec.OperandsRemap)
	}
	if transfer.over {
		return spec.Estimate{}, ref.EstimateOverflow("transfer_descriptor_bytes", spec.OperandsTransfer)
	}
	est.RemapMetadataBytes, est.TransferDescriptorBytes = remap.v, transfer.v
	if est.LogitsWindowBytes, ok = logitsWindow(n, e.ctx); !ok {
		return spec.Estimate{}, ref.EstimateOverflow("logits_window_bytes", spec.OperandsLogits)
	}
	if err := e.mqa(&est, extra, sumE, sumCtx, perRank); err != nil {
		return spec.Estimate{}, err
	}
	return e.groups(est)
}

// logitsWindow is n·LogitRowsPerReq·VocabSize·4; a zero factor first keeps
// an intermediate product from overflowing where the exact value is 0.
func logitsWindow(n int, ctx spec.EstimatorContext) (int64, bool) {
	if n == 0 || ctx.LogitRowsPerReq == 0 {
		return 0, true
	}
	v, ok := mul(int64(n), ctx.LogitRowsPerReq)
	if ok {
		v, ok = mul(v, ctx.VocabSize)
	}
	if ok {
		v, ok = mul(v, spec.MQALogitsElemBytes)
	}
	return v, ok
}

// mqa fills the MQA term, the worst rank and (if perRank) the list.
func (e *estimator) mqa(est *spec.Estimate, extra *spec.EstimateReq, sumE, sumCtx int64, perRank bool) error {
	c := int(e.ctx.CPSize)
	if perRank {
		est.PerRank = make([]spec.RankMQA, c)
	}
	var z zigzag
	if extra != nil {
		z = split(c, *extra)
	}
	for rk := range c {
		q, k := e.q[rk], e.k[rk]
		if extra != nil {
			dq, dk := z.share(rk)
			q, k = addSat(q, dq), addSat(k, dk)
		}
		if e.f.FullRequestQK {
			q, k = sumE, sumCtx
		}
		rows := e.chunkRows(q, k)
		peak, ok := mul(rows, k)
		if ok {
			peak, ok = mul(peak, spec.MQALogitsElemBytes)
		}
		if !ok {
			return ref.EstimateOverflow("mqa_logits_peak_bytes", ref.MQAOverflowOperands(int64(rk), q, k, rows))
		}
		if perRank {
			est.PerRank[rk] = spec.RankMQA{Rank: int64(rk), QRows: q, KRows: k, ChunkRows: rows, PeakBytes: peak}
		}
		if peak > est.MQALogitsPeakBytes && (rk == 0 || !e.f.Rank0Only) {
			est.MQALogitsPeakBytes, est.WorstRank = peak, int64(rk)
		}
	}
	if e.f.MQATermMissing {
		est.MQALogitsPeakBytes, est.WorstRank = 0, 0
	}
	return nil
}

// groups adds up A2.4's groups and total in the reference's check order:
// prefetch, layer-forward peak, per-forward, total.
func (e *estimator) groups(est spec.Estimate) (spec.Estimate, error) {
	dense := acc{v: est.MLAMaterializeBytes}.plus(est.IndexMaterializeBytes, true)
	prefetch := acc{}
	if e.ctx.BsGt1L1PrefetchEnabled {
		prefetch = dense
	}
	if prefetch.over {
		return spec.Estimate{}, ref.EstimateOverflow("prefetch_bytes", spec.OperandsPrefetch)
	}
	layer := dense.plus(est.MQALogitsPeakBytes, true)
	if layer.over {
		return spec.Estimate{}, ref.EstimateOverflow("layer_forward_peak_bytes", spec.OperandsLayerPeak)
	}
	perFwd := acc{v: est.RemapMetadataBytes}.plus(est.TransferDescriptorBytes, true).plus(est.LogitsWindowBytes, true)
	if perFwd.over {
		return spec.Estimate{}, ref.EstimateOverflow("per_forward_bytes", spec.OperandsPerFwd)
	}
	total := perFwd.plus(layer.v, true).plus(prefetch.v, true)
	if total.over {
		return spec.Estimate{}, ref.EstimateOverflow("total_bytes", spec.OperandsTotal)
	}
	est.PrefetchBytes, est.LayerForwardPeakBytes, est.PerForwardBytes, est.TotalBytes = prefetch.v, layer.v, perFwd.v, total.v
	return est, nil
}

// chunkRows is A2.3's R. The GiB cap int(g·2^30) fits int64 unless g >=
// 2^33 (capB < 0); then the exact quotient is taken in math/big (never on
// a real configuration, but the reference is exact and so is this).
func (e *estimator) chunkRows(q, k int64) int64 {
	c := e.ctx.Chunk
	switch {
	case q == 0:
		return 0
	case c.MaxRows != nil:
		return min(q, *c.MaxRows)
	case c.MaxGB == nil:
		return q
	case e.capB < 0:
		per := new(big.Int).Quo(ref.GBCapExact(*c.MaxGB), new(big.Int).Mul(big.NewInt(k), big.NewInt(spec.MQALogitsElemBytes)))
		if per.Cmp(big.NewInt(q)) >= 0 {
			return q
		}
		return max(1, per.Int64())
	case k > math.MaxInt64/spec.MQALogitsElemBytes:
		return 1 // 4K > cap: one row, the floor
	}
	return min(q, max(1, e.capB/(k*spec.MQALogitsElemBytes)))
}

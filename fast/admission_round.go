package fast

// The admission.round op's fast twin (docs/spec/admission-serving.md §A1): the same
// walk as ref.AdmissionRound, but every budget is a running counter updated by
// charge() instead of a sum recomputed per read, so one decision is O(1)
// and allocation-free apart from the batch it appends to. Floating-point
// sums are made in ref's order (construction terms, then each charge), so
// rem_total_tokens is bit-identical.

import (
	"strconv"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// adder is the incremental PrefillAdder.
type adder struct {
	cfg       spec.AdderConfig
	f         fault.Admission
	pool      spec.PoolState
	ps        int64
	totalOff  float64 // rem_total_token_offset
	charged   int64   // Σ CeilPage(charge): cur offset − mixed, input and chunk spend
	remInput0 int64
	remChunk0 int64
	chunkOn   bool
	effLimit  int64
	limitOn   bool
	cumExt    int64
	cumCached int64
	logHit    int64
	anyChunk  bool // some entry is chunked (continuing or new)
	l2Left    int64
	l2Bounded bool
	l2Loaded  int64
	est       spec.BufferEstimator
	batch     []spec.PlannedEntry // the estimator's view of the batch, reused
	lin       *spec.LinearBuffer  // the JSON buffer model, summed incrementally
	inc       *BufferEstimator    // A2's estimator over the batch, kept incrementally
	linSum    int64               // lin's estimate of the admitted batch
	admitted  []spec.AdmittedReq
	warnings  []string
}

// budgets is §A1.4 and C1, with the fault switches of A1-B3..B5.
func budgets(cfg spec.AdderConfig, f fault.Admission) (remInput int64, remChunk, eff *int64) {
	remInput = cfg.MaxPrefillTokens - cfg.MixedDecodeTokens
	if c := cfg.ChunkedPrefillSize; c != nil && *c > 0 {
		v := *c - cfg.MixedDecodeTokens
		remChunk = &v
	}
	if cfg.CP == nil {
		return remInput, remChunk, nil
	}
	user := cfg.CP.MaxTotalExtendTokens
	switch {
	case user == nil && remChunk != nil && !f.NoDefaultLimit:
		eff = remChunk
	case user != nil && (remChunk == nil || f.UserLimitUncapped):
		eff = user
	case user != nil:
		v := min(*user, *remChunk)
		eff = &v
	}
	if eff != nil && !f.NoLift {
		remInput = max(remInput, *eff)
	}
	return remInput, remChunk, eff
}

func newAdder(in *spec.AdmissionRoundInput, f fault.Admission) *adder {
	cfg := in.Config
	remInput, remChunk, eff := budgets(cfg, f)
	a := &adder{cfg: cfg, f: f, pool: in.Pool, ps: cfg.PageSize, remInput0: remInput,
		est: ref.BufferEstimatorOf(cfg.CP)}
	a.totalOff = float64(cfg.MixedDecodeTokens)
	for _, r := range in.Running {
		a.totalOff += ref.RunningOffset(r, cfg.NewTokenRatio)
	}
	if remChunk != nil {
		a.remChunk0, a.chunkOn = *remChunk, true
	}
	if eff != nil {
		a.effLimit, a.limitOn = *eff, true
	}
	if in.L2LoadBackCapacity != nil {
		a.l2Left, a.l2Bounded = *in.L2LoadBackCapacity, true
	}
	n := len(in.Queue) + 1
	if m := cfg.MaxRunningRequests - int64(len(in.Running)); m >= 0 && int64(n) > m+1 {
		n = int(m + 1) // the driver never admits more than max_running_requests
	}
	if cfg.CP != nil && cfg.CP.MaxRequests != nil && int64(n) > *cfg.CP.MaxRequests+1 {
		n = int(*cfg.CP.MaxRequests + 1)
	}
	a.admitted = make([]spec.AdmittedReq, 0, n)
	switch {
	case a.est == nil:
	case cfg.CP.Estimator == nil && cfg.CP.EstimatorContext != nil:
		// A2 priced incrementally: O(cp_size) per decision, no allocation.
		// ValidateAdmissionRound accepted the context, so this cannot fail; if it
		// did, a.est (the reference adapter) still prices every candidate.
		a.inc, _ = NewBufferEstimator(*cfg.CP.EstimatorContext)
	case cfg.CP.Estimator == nil:
		a.lin = cfg.CP.BufferModel // O(1) per decision instead of a pass over the batch
	default:
		a.batch = make([]spec.PlannedEntry, 0, n+1)
	}
	return a
}

func (a *adder) remTotal() float64 {
	return float64(a.pool.Available+a.pool.Evictable) - a.totalOff
}

func (a *adder) curRem() int64 {
	return a.pool.Available + a.pool.Evictable - a.cfg.MixedDecodeTokens - a.charged
}

func (a *adder) remInput() int64 { return a.remInput0 - a.charged }
func (a *adder) remChunk() int64 { return a.remChunk0 - a.charged }

// charge is §A1.5 charge(); it returns the page-ceiled extend.
func (a *adder) charge(hit, extend, maxNew int64) int64 {
	e := ref.CeilPage(extend, a.ps)
	a.totalOff += float64(e + maxNew)
	a.charged += e
	a.logHit += hit
	return e
}

func (a *adder) budgetState() (spec.AddReqResult, spec.StopDetail) {
	switch {
	case a.remTotal() <= 0:
		return spec.NoToken, spec.DetailBudgetTotal
	case a.curRem() <= 0:
		return spec.NoToken, spec.DetailBudgetCurrent
	case a.remInput() <= 0:
		return spec.Other, spec.DetailBudgetInput
	case a.chunkOn && a.remChunk() <= 0:
		return spec.Other, spec.DetailBudgetChunk
	}
	return spec.Continue, ""
}

// addChunkedReq is §A1.7; it reports whether the request is still truncated.
func (a *adder) addChunkedReq(r *spec.Request) bool {
	extend := r.InputLen - r.L1Prefix
	rem := int64(a.remTotal())
	if a.chunkOn {
		rem = min(a.remChunk(), rem)
	}
	if rem <= 0 {
		return true
	}
	truncated := extend > rem
	run := min(extend, rem)
	maxNew := int64(0)
	if !truncated {
		maxNew = ref.ChargeMaxNew(r.MaxNewTokens)
	}
	e := a.charge(0, run, maxNew)
	a.admit(spec.AdmittedReq{RID: r.RID, PrefixLen: r.L1Prefix, RunExtend: run, ChargedExtend: e, Chunked: truncated}, e)
	return truncated
}

// admit appends an entry and its CP contributions.
func (a *adder) admit(e spec.AdmittedReq, cumExt int64) {
	a.admitted = append(a.admitted, e)
	a.anyChunk = a.anyChunk || e.Chunked
	if a.cfg.CP != nil {
		a.cumExt += cumExt
		a.cumCached += e.PrefixLen
		if a.f.CachedBeforeLoadBack {
			a.cumCached -= e.LoadedFromL2
		}
	}
	switch {
	case a.lin != nil:
		a.linSum += a.linTerm(e.PrefixLen, e.RunExtend) // the gate just summed it without overflow
	case a.inc != nil:
		_ = a.inc.Add(spec.EstimateReq{PrefixLen: e.PrefixLen, ExtendLen: e.RunExtend}) // lengths are >= 0: Add cannot refuse
	case a.est != nil:
		a.batch = append(a.batch, spec.PlannedEntry{PrefixLen: e.PrefixLen, RunExtend: e.RunExtend})
	}
}

func (a *adder) linTerm(prefix, extend int64) int64 {
	return a.lin.PerRequest + a.lin.PerPrefixToken*prefix + a.lin.PerExtendToken*extend
}

// estimate is the buffer estimate of the batch plus the candidate: the
// linear model's running sum, or the estimator over the whole batch. The
// linear path fails exactly where LinearBuffer.Estimate would: at the
// candidate's index, since the batch's own sum was checked when its last
// entry was the candidate.
func (a *adder) estimate(prefix, extend int64) (int64, error) {
	if a.inc != nil {
		return a.inc.TotalWith(spec.EstimateReq{PrefixLen: prefix, ExtendLen: extend})
	}
	if a.lin == nil {
		return a.est(append(a.batch, spec.PlannedEntry{PrefixLen: prefix, RunExtend: extend}))
	}
	b := a.linTerm(prefix, extend)
	if spec.AddOverflows(a.linSum, b) {
		return 0, spec.Reject(spec.ErrOverflow, spec.Idx("buffer_estimate.batch", len(a.admitted)), b, "running total fits int64")
	}
	return a.linSum + b, nil
}

type verdict struct {
	res      spec.AddReqResult
	detail   spec.StopDetail
	admitted bool
}

// addOneReq is §A1.6 for queue[i].
func (a *adder) addOneReq(i int, r *spec.Request) (verdict, error) {
	cp, ps := a.cfg.CP, a.ps
	gates := cp != nil && (len(a.admitted) > 0 || a.f.GatesOnEmptyBatch)
	if gates && cp.MaxRequests != nil && int64(len(a.admitted)) >= *cp.MaxRequests {
		return verdict{spec.Other, spec.DetailCPMaxRequests, false}, nil
	}
	prefix := r.L1Prefix
	extend := r.InputLen - prefix
	total := float64(ref.TotalTokens(extend, r))
	if total >= a.remTotal() {
		return verdict{spec.NoToken, spec.DetailRemTotal, false}, nil
	}
	if ref.CeilPage(extend-r.HostHit, ps) >= a.remInput() && len(a.admitted) > 0 {
		return verdict{spec.Other, spec.DetailRemInput, false}, nil
	}
	if r.L1PrefixEvictable > a.pool.Evictable {
		return verdict{}, spec.Reject(spec.ErrEvictableShort, spec.Idx("queue", i)+".l1_prefix_evictable", r.L1PrefixEvictable,
			"<= pool.evictable ("+strconv.FormatInt(a.pool.Evictable, 10)+") at lock time")
	}
	a.pool.Evictable -= r.L1PrefixEvictable
	var loaded int64
	refuse := func(v verdict) (verdict, error) {
		a.pool.Evictable += r.L1PrefixEvictable + loaded
		return v, nil
	}
	if !a.f.SkipLockRecheck && total >= a.remTotal() {
		return refuse(verdict{spec.NoToken, spec.DetailRemTotal, false})
	}
	if r.HostHit > 0 && a.loadBack(r.HostHit) {
		loaded = r.HostHit
		prefix += loaded
		extend = r.InputLen - prefix
	}
	input := ref.CeilPage(extend, ps)
	if input >= a.remInput() && len(a.admitted) > 0 {
		return refuse(verdict{spec.Other, spec.DetailRemInput, false})
	}
	chargeExt, runExt, maxNew, chunked := input, extend, ref.ChargeMaxNew(r.MaxNewTokens), false
	if a.chunkOn && input > a.remChunk() {
		trunc := ref.FloorPage(a.remChunk(), ps)
		if trunc <= 0 {
			return refuse(verdict{spec.Other, spec.DetailRemChunk, false})
		}
		if al := a.cfg.TruncationAlignSize; al != nil {
			if trunc < *al {
				return refuse(verdict{spec.Other, spec.DetailTruncationAlign, false})
			}
			trunc = trunc / *al * *al
		}
		if a.anyChunk {
			return verdict{}, spec.Reject(spec.ErrSecondChunk, spec.Idx("queue", i), "chunked", secondChunkBound(a.cfg))
		}
		chargeExt, runExt, maxNew, chunked = trunc, trunc, 0, true
	}
	if gates {
		cached := prefix
		if a.f.CachedBeforeLoadBack {
			cached = r.L1Prefix
		}
		v, err := a.cpGates(cached, prefix, chargeExt, runExt)
		if err != nil {
			return verdict{}, err
		}
		if v.res != spec.Continue {
			return refuse(v)
		}
	} else if cp != nil && a.est != nil {
		if err := a.warnIfOversized(r.RID, prefix, runExt); err != nil {
			return verdict{}, err
		}
	}
	e := a.charge(prefix, chargeExt, maxNew)
	a.admit(spec.AdmittedReq{RID: r.RID, PrefixLen: prefix, LoadedFromL2: loaded, RunExtend: runExt, ChargedExtend: e, Chunked: chunked}, chargeExt)
	res, detail := a.budgetState()
	return verdict{res, detail, true}, nil
}

// loadBack is §A1.6 step 5; it reports success.
func (a *adder) loadBack(hit int64) bool {
	var left *int64
	if a.l2Bounded {
		left = &a.l2Left
	}
	if !ref.LoadBackOK(hit, a.pool, left) {
		return false
	}
	ref.ApplyLoadBack(&a.pool, hit)
	if a.l2Bounded {
		a.l2Left -= hit
	}
	a.l2Loaded += hit
	return true
}

// cpGates runs C3–C5 (§A1.9); cached is the candidate's cached count.
func (a *adder) cpGates(cached, prefix, chargeExt, runExt int64) (verdict, error) {
	cp := a.cfg.CP
	if cp.MaxTotalCachedTokens != nil && a.cumCached+cached > *cp.MaxTotalCachedTokens {
		return verdict{spec.Other, spec.DetailCPMaxCachedTokens, false}, nil
	}
	if a.limitOn && a.cumExt+chargeExt > a.effLimit {
		return verdict{spec.Other, spec.DetailCPMaxExtendTokens, false}, nil
	}
	if a.est != nil {
		bytes, err := a.estimate(prefix, runExt)
		if err != nil {
			return verdict{}, err
		}
		if bytes > *cp.MaxBufferSizeBytes {
			return verdict{spec.Other, spec.DetailCPMaxBufferSize, false}, nil
		}
	}
	return verdict{spec.Continue, "", false}, nil
}

func (a *adder) warnIfOversized(rid string, prefix, runExt int64) error {
	bytes, err := a.estimate(prefix, runExt) // the batch is empty here
	if err != nil {
		return err
	}
	if m := *a.cfg.CP.MaxBufferSizeBytes; bytes > m {
		a.warnings = append(a.warnings, ref.SingleOversizedWarning(rid, bytes, m))
	}
	return nil
}

// AdmissionRound runs one scheduling step (docs/spec/admission-serving.md §A1.10); see
// ref.AdmissionRound for the contract. Budgets are kept incrementally.
func AdmissionRound(lim spec.Limits, in spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error) {
	return admissionRoundWithFaults(lim, in, fault.Admission{})
}

// admissionRoundWithFaults is AdmissionRound with the historic bugs f selects put
// back, for the bug zoo only: fault.Hooks hands it to equiv/mutants
// (hooks.go). Called with the zero value it is AdmissionRound.
func admissionRoundWithFaults(_ spec.Limits, in spec.AdmissionRoundInput, f fault.Admission) (spec.AdmissionRoundOutput, error) {
	if err := ref.ValidateAdmissionRound(in); err != nil {
		return spec.AdmissionRoundOutput{}, err
	}
	a := newAdder(&in, f)
	out := spec.AdmissionRoundOutput{Stop: spec.RoundStop{Result: spec.Continue, Detail: spec.DetailQueueExhausted}}
	if in.Chunked != nil && a.addChunkedReq(in.Chunked) {
		out.NextChunkedRID = in.Chunked.RID
	}
	for i := range in.Queue {
		r := &in.Queue[i]
		if int64(len(in.Running)+len(a.admitted)) >= in.Config.MaxRunningRequests {
			out.Stop, out.BatchIsFull = spec.RoundStop{Result: spec.Other, Detail: spec.DetailMaxRunning, RID: r.RID}, true
			break
		}
		v, err := a.addOneReq(i, r)
		if err != nil {
			return spec.AdmissionRoundOutput{}, err
		}
		if v.admitted && a.admitted[len(a.admitted)-1].Chunked {
			out.NextChunkedRID = r.RID
		}
		if v.res == spec.Continue {
			continue
		}
		if v.res == spec.NoToken {
			out.BatchIsFull = !in.Config.HierarchicalCache || len(a.admitted) > 0 || len(in.Running) > 0
		}
		out.Stop = spec.RoundStop{Result: v.res, Detail: v.detail, RID: r.RID, Admitted: v.admitted}
		break
	}
	a.snapshot(&out)
	return out, nil
}

func (a *adder) snapshot(out *spec.AdmissionRoundOutput) {
	out.Admitted = a.admitted
	out.RemTotalTokens, out.CurRemTokens, out.RemInputTokens = a.remTotal(), a.curRem(), a.remInput()
	if a.chunkOn {
		v := a.remChunk()
		out.RemChunkTokens = &v
	}
	out.LogHitTokens, out.LogInputTokens = a.logHit, a.charged
	if a.cfg.CP != nil {
		if a.limitOn {
			v := a.effLimit
			out.EffectiveCPExtendLimit = &v
		}
		out.CumExtend, out.CumCached = a.cumExt, a.cumCached
	}
	out.L2Loaded, out.Warnings, out.Pool = a.l2Loaded, a.warnings, a.pool
}

func secondChunkBound(cfg spec.AdderConfig) string {
	align := "unset"
	if cfg.TruncationAlignSize != nil {
		align = strconv.FormatInt(*cfg.TruncationAlignSize, 10)
	}
	return "at most one chunked request per round (truncation_align_size " + align +
		" is not a multiple of page_size " + strconv.FormatInt(cfg.PageSize, 10) + ")"
}

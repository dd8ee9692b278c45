package ref

// The admission.round op (docs/spec/admission-serving.md §A1): the PrefillAdder and
// the scheduler's queue walk. This twin keeps only the facts — the pool,
// the admitted entries, the load-back tally — and recomputes every budget
// from scratch whenever it reads one, so it reads like the spec's formulas.
// The fast twin keeps the same budgets incrementally.

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// admissionEntry is one admitted entry and what its admission charged.
type admissionEntry struct {
	out       spec.AdmittedReq
	chargeArg int64 // the extend passed to charge() (before its CeilPage)
	maxNew    int64 // the max_new passed to charge()
	hit       int64 // the prefix_len passed to charge() (0 for a continuing chunk)
	cumExtend int64 // the CP cum_extend contribution
	newChunk  bool  // cut by add_one_req this round
}

// refAdder is the §A1 PrefillAdder state.
type refAdder struct {
	cfg      spec.AdderConfig
	pool     spec.PoolState
	running  []spec.RunningReq
	init     spec.Budgets
	entries  []admissionEntry
	l2Left   *int64
	l2Loaded int64
	warnings []string
}

// remTotalOffset is rem_total_token_offset: mixed + Σ running offsets + Σ
// charges, summed in the order the charges were made (float64, §A1.3).
func (a *refAdder) remTotalOffset() float64 {
	off := float64(a.cfg.MixedDecodeTokens)
	for _, r := range a.running {
		off += RunningOffset(r, a.cfg.NewTokenRatio)
	}
	for _, e := range a.entries {
		off += float64(CeilPage(e.chargeArg, a.cfg.PageSize) + e.maxNew)
	}
	return off
}

// charged is Σ CeilPage(charge) over the admitted entries.
func (a *refAdder) charged() int64 {
	var s int64
	for _, e := range a.entries {
		s += CeilPage(e.chargeArg, a.cfg.PageSize)
	}
	return s
}

func (a *refAdder) remTotal() float64 {
	return float64(a.pool.Available+a.pool.Evictable) - a.remTotalOffset()
}

func (a *refAdder) curRem() int64 {
	return a.pool.Available + a.pool.Evictable - (a.cfg.MixedDecodeTokens + a.charged())
}

func (a *refAdder) remInput() int64 { return a.init.RemInput - a.charged() }

func (a *refAdder) remChunk() *int64 {
	if a.init.RemChunk == nil {
		return nil
	}
	v := *a.init.RemChunk - a.charged()
	return &v
}

func (a *refAdder) cumExtend() int64 {
	var s int64
	for _, e := range a.entries {
		s += e.cumExtend
	}
	return s
}

func (a *refAdder) cumCached() int64 {
	var s int64
	for _, e := range a.entries {
		s += e.out.PrefixLen
	}
	return s
}

func (a *refAdder) hasNewChunk() bool {
	for _, e := range a.entries {
		if e.out.Chunked {
			return true
		}
	}
	return false
}

// budgetState is §A1.5 budget_state().
func (a *refAdder) budgetState() (spec.AddReqResult, spec.StopDetail) {
	switch {
	case a.remTotal() <= 0:
		return spec.NoToken, spec.DetailBudgetTotal
	case a.curRem() <= 0:
		return spec.NoToken, spec.DetailBudgetCurrent
	case a.remInput() <= 0:
		return spec.Other, spec.DetailBudgetInput
	}
	if c := a.remChunk(); c != nil && *c <= 0 {
		return spec.Other, spec.DetailBudgetChunk
	}
	return spec.Continue, detailNone
}

// addChunkedReq is §A1.7; it reports whether the request is still truncated.
func (a *refAdder) addChunkedReq(r *spec.Request) bool {
	extend := r.InputLen - r.L1Prefix
	rem := int64(a.remTotal()) // int() truncates toward zero
	if c := a.remChunk(); c != nil {
		rem = min(*c, rem)
	}
	if rem <= 0 {
		return true // carries over unchanged
	}
	truncated := extend > rem
	run := min(extend, rem)
	maxNew := int64(0)
	if !truncated {
		maxNew = ChargeMaxNew(r.MaxNewTokens)
	}
	e := admissionEntry{out: spec.AdmittedReq{RID: r.RID, PrefixLen: r.L1Prefix, RunExtend: run,
		ChargedExtend: CeilPage(run, a.cfg.PageSize), Chunked: truncated}, chargeArg: run, maxNew: maxNew}
	if a.cfg.CP != nil {
		e.cumExtend = CeilPage(run, a.cfg.PageSize)
	}
	a.entries = append(a.entries, e)
	return truncated
}

// verdict is add_one_req's answer and whether it appended the request.
type verdict struct {
	res      spec.AddReqResult
	detail   spec.StopDetail
	admitted bool
}

// addOneReq is §A1.6; r is read-only.
func (a *refAdder) addOneReq(field string, r *spec.Request) (verdict, error) {
	cp := a.cfg.CP
	ps := a.cfg.PageSize
	if cp != nil && cp.MaxRequests != nil && int64(len(a.entries)) >= *cp.MaxRequests {
		return verdict{spec.Other, spec.DetailCPMaxRequests, false}, nil
	}
	prefix := r.L1Prefix
	extend := r.InputLen - prefix
	total := TotalTokens(extend, r)
	if float64(total) >= a.remTotal() {
		return verdict{spec.NoToken, spec.DetailRemTotal, false}, nil
	}
	if CeilPage(extend-r.HostHit, ps) >= a.remInput() && len(a.entries) > 0 {
		return verdict{spec.Other, spec.DetailRemInput, false}, nil
	}
	if r.L1PrefixEvictable > a.pool.Evictable {
		return verdict{}, spec.Reject(spec.ErrEvictableShort, field+".l1_prefix_evictable", r.L1PrefixEvictable,
			fmt.Sprintf("<= pool.evictable (%d) at lock time", a.pool.Evictable))
	}
	a.pool.Evictable -= r.L1PrefixEvictable // lock
	var loaded int64
	unlock := func(v verdict) (verdict, error) {
		a.pool.Evictable += r.L1PrefixEvictable + loaded
		return v, nil
	}
	if float64(total) >= a.remTotal() {
		return unlock(verdict{spec.NoToken, spec.DetailRemTotal, false})
	}
	if r.HostHit > 0 && LoadBackOK(r.HostHit, a.pool, a.l2Left) {
		ApplyLoadBack(&a.pool, r.HostHit)
		loaded = r.HostHit
		if a.l2Left != nil {
			*a.l2Left -= loaded
		}
		a.l2Loaded += loaded
		prefix += loaded
		extend = r.InputLen - prefix
	}
	input := CeilPage(extend, ps)
	if input >= a.remInput() && len(a.entries) > 0 {
		return unlock(verdict{spec.Other, spec.DetailRemInput, false})
	}
	chargeExt, runExt, maxNew, chunked := input, extend, ChargeMaxNew(r.MaxNewTokens), false
	if c := a.remChunk(); c != nil && input > *c {
		trunc, stop := a.chunkCut(*c)
		if stop != detailNone {
			return unlock(verdict{spec.Other, stop, false})
		}
		if a.hasNewChunk() {
			return verdict{}, secondChunkError(field, a.cfg)
		}
		chargeExt, runExt, maxNew, chunked = trunc, trunc, 0, true
	}
	if cp != nil && len(a.entries) > 0 {
		if v, err := a.cpGates(prefix, chargeExt, runExt); err != nil || v.res != spec.Continue {
			if err != nil {
				return verdict{}, err
			}
			return unlock(v)
		}
	}
	if cp != nil && len(a.entries) == 0 {
		if err := a.warnIfOversized(r.RID, prefix, runExt); err != nil {
			return verdict{}, err
		}
	}
	e := admissionEntry{out: spec.AdmittedReq{RID: r.RID, PrefixLen: prefix, LoadedFromL2: loaded, RunExtend: runExt,
		ChargedExtend: CeilPage(chargeExt, ps), Chunked: chunked}, chargeArg: chargeExt, maxNew: maxNew, hit: prefix, newChunk: chunked}
	if cp != nil {
		e.cumExtend = chargeExt
	}
	a.entries = append(a.entries, e)
	res, detail := a.budgetState()
	return verdict{res, detail, true}, nil
}

// chunkCut is §A1.6 step 7's cut of a request that does not fit the chunk
// budget remChunk: page-floored, then aligned; or the detail it stops with.
func (a *refAdder) chunkCut(remChunk int64) (int64, spec.StopDetail) {
	trunc := FloorPage(remChunk, a.cfg.PageSize)
	if trunc <= 0 {
		return 0, spec.DetailRemChunk
	}
	if al := a.cfg.TruncationAlignSize; al != nil {
		if trunc < *al {
			return 0, spec.DetailTruncationAlign
		}
		trunc = trunc / *al * *al
	}
	return trunc, detailNone
}

// cpGates runs C3, C4 and C5 (§A1.9) on a non-empty batch.
func (a *refAdder) cpGates(prefix, chargeExt, runExt int64) (verdict, error) {
	cp := a.cfg.CP
	if cp.MaxTotalCachedTokens != nil && a.cumCached()+prefix > *cp.MaxTotalCachedTokens {
		return verdict{spec.Other, spec.DetailCPMaxCachedTokens, false}, nil
	}
	if a.init.EffLimit != nil && a.cumExtend()+chargeExt > *a.init.EffLimit {
		return verdict{spec.Other, spec.DetailCPMaxExtendTokens, false}, nil
	}
	if est := BufferEstimatorOf(cp); est != nil {
		batch := make([]spec.PlannedEntry, 0, len(a.entries)+1)
		for _, e := range a.entries {
			batch = append(batch, spec.PlannedEntry{PrefixLen: e.out.PrefixLen, RunExtend: e.out.RunExtend})
		}
		bytes, err := est(append(batch, spec.PlannedEntry{PrefixLen: prefix, RunExtend: runExt}))
		if err != nil {
			return verdict{}, err
		}
		if bytes > *cp.MaxBufferSizeBytes {
			return verdict{spec.Other, spec.DetailCPMaxBufferSize, false}, nil
		}
	}
	return verdict{spec.Continue, detailNone, false}, nil
}

// warnIfOversized records §A1.9's WARNING for a lone request over the
// buffer limit (it is admitted anyway: no deadlock).
func (a *refAdder) warnIfOversized(rid string, prefix, runExt int64) error {
	est := BufferEstimatorOf(a.cfg.CP)
	if est == nil {
		return nil
	}
	bytes, err := est([]spec.PlannedEntry{{PrefixLen: prefix, RunExtend: runExt}})
	if err != nil {
		return err
	}
	if bytes > *a.cfg.CP.MaxBufferSizeBytes {
		a.warnings = append(a.warnings, SingleOversizedWarning(rid, bytes, *a.cfg.CP.MaxBufferSizeBytes))
	}
	return nil
}

// secondChunkError is A1.13.6's refusal of a second cut in one round.
func secondChunkError(field string, cfg spec.AdderConfig) error {
	align := "unset"
	if cfg.TruncationAlignSize != nil {
		align = fmt.Sprint(*cfg.TruncationAlignSize)
	}
	return spec.Reject(spec.ErrSecondChunk, field, "chunked", fmt.Sprintf(
		"at most one chunked request per round (truncation_align_size %s is not a multiple of page_size %d)", align, cfg.PageSize))
}

// AdmissionRound runs one scheduling step (§A1.10): the continuing chunk
// first, then the queue in order until a request does not return
// Continue. Input is validated first (ValidateAdmissionRound), so an error leaves
// nothing behind; the lock-time evictable check, the second-chunk check
// and estimator errors fail the whole round.
func AdmissionRound(_ spec.Limits, in spec.AdmissionRoundInput) (spec.AdmissionRoundOutput, error) {
	if err := ValidateAdmissionRound(in); err != nil {
		return spec.AdmissionRoundOutput{}, err
	}
	a := &refAdder{cfg: in.Config, pool: in.Pool, running: in.Running, init: InitialBudgets(in.Config)}
	if in.L2LoadBackCapacity != nil {
		v := *in.L2LoadBackCapacity
		a.l2Left = &v
	}
	out := spec.AdmissionRoundOutput{Stop: spec.RoundStop{Result: spec.Continue, Detail: spec.DetailQueueExhausted}}
	if in.Chunked != nil && a.addChunkedReq(in.Chunked) {
		out.NextChunkedRID = in.Chunked.RID
	}
	for i := range in.Queue {
		r := &in.Queue[i]
		if int64(len(in.Running)+len(a.entries)) >= in.Config.MaxRunningRequests {
			out.Stop, out.BatchIsFull = spec.RoundStop{Result: spec.Other, Detail: spec.DetailMaxRunning, RID: r.RID, Admitted: false}, true
			break
		}
		v, err := a.addOneReq(spec.Idx("queue", i), r)
		if err != nil {
			return spec.AdmissionRoundOutput{}, err
		}
		if v.admitted && a.entries[len(a.entries)-1].newChunk {
			out.NextChunkedRID = r.RID
		}
		if v.res == spec.Continue {
			continue
		}
		if v.res == spec.NoToken {
			out.BatchIsFull = !in.Config.HierarchicalCache || len(a.entries) > 0 || len(in.Running) > 0
		}
		out.Stop = spec.RoundStop{Result: v.res, Detail: v.detail, RID: r.RID, Admitted: v.admitted}
		break
	}
	a.snapshot(&out)
	return out, nil
}

// snapshot fills the result's batch and budgets after the walk.
func (a *refAdder) snapshot(out *spec.AdmissionRoundOutput) {
	out.Admitted = make([]spec.AdmittedReq, 0, len(a.entries))
	for _, e := range a.entries {
		out.Admitted = append(out.Admitted, e.out)
		out.LogHitTokens += e.hit
	}
	out.RemTotalTokens, out.CurRemTokens, out.RemInputTokens = a.remTotal(), a.curRem(), a.remInput()
	out.RemChunkTokens = a.remChunk()
	out.LogInputTokens = a.charged()
	if a.cfg.CP != nil {
		out.EffectiveCPExtendLimit = a.init.EffLimit
		out.CumExtend, out.CumCached = a.cumExtend(), a.cumCached()
	}
	out.L2Loaded, out.Warnings, out.Pool = a.l2Loaded, a.warnings, a.pool
}

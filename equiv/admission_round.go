package equiv

import (
	"fmt"
	"math"
	"slices"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionRound is the differential spec of admission.round
// (docs/spec/admission-serving.md §A1) with the §A1.13 properties.
func AdmissionRound() *Spec[spec.AdmissionRoundInput, spec.AdmissionRoundOutput] {
	return &Spec[spec.AdmissionRoundInput, spec.AdmissionRoundOutput]{
		Op:          catalog.AdmissionRound(),
		Valid:       rapid.Custom(AdmissionValid),
		Invalid:     rapid.Custom(admissionInvalid),
		Boundary:    append(admissionBoundary(), admissionFailureCases()...),
		Regressions: admissionRegressions(),
		Rejects:     admissionRejects(),
		Props:       AdmissionProps(),
	}
}

// AdmissionProps are §A1.13's invariants plus the monotonicity and
// single-request properties, each checked on one round's result.
func AdmissionProps() []Prop[spec.AdmissionRoundInput, spec.AdmissionRoundOutput] {
	return []Prop[spec.AdmissionRoundInput, spec.AdmissionRoundOutput]{
		{"budget-conservation", admissionBudgetConservation},
		{"failure-purity", admissionFailurePurity},
		{"page-alignment", admissionPageAlignment},
		{"monotonic-budgets", admissionMonotonicBudgets},
		{"queue-order", admissionQueueOrder},
		{"at-most-one-chunk", admissionOneChunk},
		{"cp-bounds", admissionCPBounds},
		{"inertness", admissionInertness},
		{"lift-bound", admissionLiftBound},
		{"single-request-fits-alone", admissionSingleAlone},
		{"monotone-in-every-budget", admissionMonotoneInBudgets},
	}
}

func p64(v int64) *int64 { return &v }

// admissionReq is a §A1.12 request (L1Prefix, HostHit, ExtendLen, MaxNewTokens).
func admissionReq(rid string, l1, host, extend, maxNew int64) spec.Request {
	return spec.Request{RID: rid, InputLen: l1 + host + extend, MaxNewTokens: maxNew, L1Prefix: l1, HostHit: host}
}

func admissionReqs(n int, l1, host, extend, maxNew int64) []spec.Request {
	q := make([]spec.Request, n)
	for i := range q {
		q[i] = admissionReq(fmt.Sprintf("r%d", i+1), l1, host, extend, maxNew)
	}
	return q
}

func admissionCfg(ps, maxPrefill int64, chunk *int64, cp *spec.CPAdmission) spec.AdderConfig {
	return spec.AdderConfig{PageSize: ps, NewTokenRatio: 0.7, MaxPrefillTokens: maxPrefill, ChunkedPrefillSize: chunk, MaxRunningRequests: 1000, CP: cp}
}

// AdmissionValid draws an accepted round: page sizes 1–64, budgets on the
// scale of the requests so every stop reason occurs, optional chunking,
// truncation alignment (a multiple of the page), mixed decode, running
// requests, a continuing chunk, HiCache host hits around the load-back
// threshold, a fake L2 capacity and the CP knobs. Σ L1PrefixEvictable +
// Σ HostHit stays within pool.Evictable, so the lock-time check holds.
func AdmissionValid(t *rapid.T) spec.AdmissionRoundInput {
	ps := rapid.SampledFrom([]int64{1, 1, 4, 16, 64}).Draw(t, "page_size")
	c := spec.AdderConfig{
		PageSize:           ps,
		NewTokenRatio:      rapid.SampledFrom([]float64{0, 0.25, 0.7, 1}).Draw(t, "ratio"),
		MaxPrefillTokens:   rapid.Int64Range(1, 20000).Draw(t, "max_prefill"),
		HierarchicalCache:  rapid.Bool().Draw(t, "hicache"),
		MaxRunningRequests: rapid.Int64Range(1, 12).Draw(t, "max_running"),
	}
	switch rapid.IntRange(0, 3).Draw(t, "chunking") {
	case 0:
	case 1:
		c.ChunkedPrefillSize = p64(rapid.Int64Range(-5, 0).Draw(t, "chunk_off"))
	default:
		c.ChunkedPrefillSize = p64(rapid.Int64Range(1, 12000).Draw(t, "chunk"))
	}
	if rapid.IntRange(0, 3).Draw(t, "mixed_on") == 0 {
		c.MixedDecodeTokens = rapid.Int64Range(0, 300).Draw(t, "mixed")
	}
	if rapid.IntRange(0, 3).Draw(t, "align_on") == 0 {
		c.TruncationAlignSize = p64(ps * rapid.Int64Range(1, 8).Draw(t, "align_pages"))
	}
	if rapid.IntRange(0, 2).Draw(t, "cp_on") > 0 {
		c.CP = admissionCPDraw(t)
	}
	in := spec.AdmissionRoundInput{Config: c, Running: []spec.RunningReq{}, Queue: []spec.Request{}}
	for range rapid.IntRange(0, 3).Draw(t, "running") {
		mn := rapid.Int64Range(0, 6000).Draw(t, "running_max_new")
		in.Running = append(in.Running, spec.RunningReq{MaxNewTokens: mn, OutputLen: rapid.Int64Range(0, mn+10).Draw(t, "running_output")})
	}
	var locked int64
	if rapid.IntRange(0, 3).Draw(t, "chunked_on") == 0 {
		pre := ps * rapid.Int64Range(1, 100).Draw(t, "chunked_prefix_pages")
		in.Chunked = &spec.Request{RID: "chunked", InputLen: pre + rapid.Int64Range(1, 20000).Draw(t, "chunked_extend"),
			MaxNewTokens: rapid.Int64Range(0, 5000).Draw(t, "chunked_max_new"), L1Prefix: pre}
	}
	for i := range rapid.IntRange(0, 8).Draw(t, "queue") {
		r := spec.Request{RID: fmt.Sprintf("q%d", i), MaxNewTokens: rapid.Int64Range(0, 5000).Draw(t, "max_new")}
		if rapid.IntRange(0, 4).Draw(t, "l1_on") > 0 {
			r.L1Prefix = ps * rapid.Int64Range(0, 4096/ps+1).Draw(t, "l1_pages")
			r.L1PrefixEvictable = rapid.Int64Range(0, r.L1Prefix).Draw(t, "l1_evictable")
		}
		switch rapid.IntRange(0, 3).Draw(t, "host") {
		case 0:
			r.HostHit = rapid.Int64Range(1, 12).Draw(t, "host_small") // around the threshold of 10
		case 1:
			r.HostHit = ps * rapid.Int64Range(1, 6000/ps+1).Draw(t, "host_pages")
		}
		r.InputLen = r.L1Prefix + r.HostHit + rapid.Int64Range(1, 6000).Draw(t, "extend")
		if rapid.IntRange(0, 5).Draw(t, "retracted") == 0 {
			r.OutputLen = rapid.Int64Range(0, r.MaxNewTokens+5).Draw(t, "output_len")
		}
		locked += r.L1PrefixEvictable + r.HostHit
		in.Queue = append(in.Queue, r)
	}
	in.Pool.Evictable = locked + rapid.SampledFrom([]int64{0, 0, 100, 5000}).Draw(t, "spare_evictable")
	in.Pool.Available = rapid.OneOf(rapid.Int64Range(0, 4000), rapid.Int64Range(0, 60000), rapid.Just[int64](1_000_000)).Draw(t, "available")
	if q := in.Queue; len(q) > 0 && q[0].L1PrefixEvictable > 0 && rapid.IntRange(0, 3).Draw(t, "tight") == 0 {
		// Tight memory for the first request: it fits before its lock and
		// not after (§A1.6 step 4's re-check), unless running requests or
		// mixed decode already took the slack.
		total := ref.TotalTokens(q[0].InputLen-q[0].L1Prefix, &q[0])
		in.Pool.Available = max(0, total-in.Pool.Evictable+rapid.Int64Range(1, q[0].L1PrefixEvictable).Draw(t, "slack"))
	}
	if rapid.IntRange(0, 3).Draw(t, "l2_cap_on") == 0 {
		in.L2LoadBackCapacity = p64(rapid.Int64Range(0, 10000).Draw(t, "l2_cap"))
	}
	if rapid.IntRange(0, 5).Draw(t, "past_limit_at_stop") == 0 {
		pastLimitAtStop(t, &in)
	}
	return in
}

// pastLimitAtStop makes the first queued request (and sometimes the first
// running one) past its own limit, output longer than max_new_tokens, and
// sizes the pool so that its total_tokens sits at rem_total_tokens or one
// below (§A1.3, §A1.6 steps 2-3): there a reservation that forgets the
// clamp max(max_new − output, 0), or clamps the running offset the spec
// leaves negative, flips the first stop. A reach class of issue 30.
func pastLimitAtStop(t *rapid.T, in *spec.AdmissionRoundInput) {
	if len(in.Running) > 0 && rapid.Bool().Draw(t, "running_past_limit") {
		r := &in.Running[0]
		r.OutputLen = r.MaxNewTokens + rapid.Int64Range(1, 300).Draw(t, "running_excess")
	}
	if len(in.Queue) == 0 {
		return
	}
	q := &in.Queue[0]
	q.OutputLen = q.MaxNewTokens + rapid.Int64Range(1, 50).Draw(t, "queued_excess")
	c := in.Config
	offset := float64(c.MixedDecodeTokens)
	for _, r := range in.Running {
		offset += ref.RunningOffset(r, c.NewTokenRatio)
	}
	// Step 3 stops when total_tokens >= Available + Evictable − offset.
	total := float64(ref.TotalTokens(q.InputLen-q.L1Prefix, q))
	stop := int64(math.Ceil(total + offset - float64(in.Pool.Evictable)))
	in.Pool.Available = max(0, stop+rapid.Int64Range(-1, 1).Draw(t, "around_stop"))
}

// admissionCPDraw draws the CP knobs; each is unset about a third of the time.
func admissionCPDraw(t *rapid.T) *spec.CPAdmission {
	knob := func(name string, lo, hi int64) *int64 {
		if rapid.IntRange(0, 2).Draw(t, name+"_on") == 0 {
			return nil
		}
		return p64(rapid.Int64Range(lo, hi).Draw(t, name))
	}
	cp := &spec.CPAdmission{
		MaxRequests:          knob("cp_max_requests", 1, 6),
		MaxTotalExtendTokens: knob("cp_max_extend", 1, 30000),
		MaxTotalCachedTokens: knob("cp_max_cached", 1, 20000),
	}
	if rapid.IntRange(0, 2).Draw(t, "buffer_on") == 0 {
		cp.BufferModel = &spec.LinearBuffer{PerRequest: rapid.Int64Range(0, 4096).Draw(t, "per_request"),
			PerPrefixToken: rapid.Int64Range(0, 700).Draw(t, "per_prefix"), PerExtendToken: rapid.Int64Range(0, 800).Draw(t, "per_extend")}
		cp.MaxBufferSizeBytes = p64(rapid.Int64Range(1, 20_000_000).Draw(t, "max_buffer"))
	}
	return cp
}

// admissionInvalid draws one §A1.14 violation in an otherwise valid round.
func admissionInvalid(t *rapid.T) Bad[spec.AdmissionRoundInput] {
	in := AdmissionValid(t)
	in.Queue = slices.Clone(in.Queue)
	if len(in.Queue) == 0 {
		in.Queue = append(in.Queue, admissionReq("only", 0, 0, 10, 0))
	}
	at := rapid.IntRange(0, len(in.Queue)-1).Draw(t, "at")
	r := &in.Queue[at]
	switch rapid.IntRange(0, 13).Draw(t, "violation") {
	case 0:
		in.Config.PageSize = rapid.Int64Range(-3, 0).Draw(t, "bad_page")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitConfig}
	case 1:
		// NaN is in the ref unit test: JSON cannot carry it into a fixture.
		in.Config.NewTokenRatio = rapid.SampledFrom([]float64{-0.1, 1.01, -1e-9, 2}).Draw(t, "bad_ratio")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitConfig}
	case 2:
		in.Config.MaxPrefillTokens = rapid.Int64Range(-3, 0).Draw(t, "bad_max_prefill")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitConfig}
	case 3:
		in.Config.MixedDecodeTokens = rapid.Int64Range(-5, -1).Draw(t, "bad_mixed")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrNegative}
	case 4:
		in.Config.TruncationAlignSize = p64(rapid.Int64Range(-2, 0).Draw(t, "bad_align"))
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitConfig}
	case 5:
		cp := spec.CPAdmission{MaxRequests: p64(rapid.Int64Range(-2, 0).Draw(t, "bad_knob"))}
		in.Config.CP = &cp
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitConfig}
	case 6:
		in.Pool.Available = rapid.Int64Range(-9, -1).Draw(t, "bad_available")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrNegative}
	case 7:
		r.InputLen = rapid.Int64Range(-2, 0).Draw(t, "bad_input_len")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitRequest}
	case 8:
		r.HostHit = r.InputLen - r.L1Prefix + rapid.Int64Range(0, 3).Draw(t, "over_host")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitRequest}
	case 9:
		r.L1PrefixEvictable = r.L1Prefix + rapid.Int64Range(1, 3).Draw(t, "over_evictable")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrAdmitRequest}
	case 10:
		r.MaxNewTokens = rapid.Int64Range(-3, -1).Draw(t, "bad_max_new")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrNegative}
	case 11:
		in.Queue = append(in.Queue, *r)
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrDuplicateRID}
	case 12:
		r.L1Prefix = spec.MaxAdmitTokens + rapid.Int64Range(1, 9).Draw(t, "huge")
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrTooLarge}
	default:
		// A request alone on an empty pool of evictable slots that claims
		// its prefix was evictable: the lock-time check.
		in = spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, nil, nil), Pool: spec.PoolState{Available: 100000, Evictable: rapid.Int64Range(0, 9).Draw(t, "short_evictable")},
			Queue: []spec.Request{{RID: "x", InputLen: 100, L1Prefix: 50, L1PrefixEvictable: 10 + rapid.Int64Range(0, 40).Draw(t, "lock")}}}
		return Bad[spec.AdmissionRoundInput]{in, spec.ErrEvictableShort}
	}
}

// admissionBoundary: §A1.12's worked examples, the load-back threshold
// (9, 10) and the CP gates at exactly their limit.
func admissionBoundary() []Case[spec.AdmissionRoundInput] {
	big := spec.PoolState{Available: 1_000_000}
	e2 := admissionE2Script()
	cs := []Case[spec.AdmissionRoundInput]{
		{"e1-basic-budgets", spec.AdmissionRoundInput{Config: admissionCfg(16, 8192, nil, nil), Pool: spec.PoolState{Available: 10000},
			Queue: []spec.Request{admissionReq("r1", 0, 0, 1000, 256), admissionReq("r2", 0, 0, 7000, 256), admissionReq("r3", 0, 0, 500, 100)}}},
		{"e2-chunk-page-floor", spec.AdmissionRoundInput{Config: e2.Config, Pool: e2.Steps[0].Pool, Queue: e2.Steps[0].Queue}},
		{"e2-continuing-chunk", spec.AdmissionRoundInput{Config: e2.Config, Pool: big, Chunked: &spec.Request{RID: "r1", InputLen: 10000, MaxNewTokens: 16, L1Prefix: 960}}},
		{"e3-no-token", spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, nil, nil), Pool: spec.PoolState{Available: 100}, Queue: []spec.Request{admissionReq("r1", 0, 0, 200, 0)}}},
		{"e3-no-token-hicache", func() spec.AdmissionRoundInput {
			c := admissionCfg(1, 8192, nil, nil)
			c.HierarchicalCache = true
			return spec.AdmissionRoundInput{Config: c, Pool: spec.PoolState{Available: 100}, Queue: []spec.Request{admissionReq("r1", 0, 0, 200, 0)}}
		}()},
		{"e4-cp-extend-gate", spec.AdmissionRoundInput{Config: admissionCfg(1, 65536, nil, &spec.CPAdmission{MaxTotalExtendTokens: p64(8192)}), Pool: big, Queue: admissionReqs(3, 0, 0, 3000, 0)}},
		{"e5-lift-equality", spec.AdmissionRoundInput{Config: admissionCfg(1, 4096, nil, &spec.CPAdmission{MaxTotalExtendTokens: p64(16384)}), Pool: big, Queue: admissionReqs(2, 0, 0, 8192, 0)}},
		{"e7-default-limit-chunk", spec.AdmissionRoundInput{Config: admissionCfg(1, 16384, p64(8192), &spec.CPAdmission{}), Pool: big, Queue: admissionReqs(3, 0, 0, 3000, 0)}},
		{"load-back-threshold-9", spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, nil, nil), Pool: big, Queue: []spec.Request{admissionReq("r1", 0, 9, 5, 0)}}},
		{"load-back-threshold-10", spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, nil, nil), Pool: big, Queue: []spec.Request{admissionReq("r1", 0, 10, 5, 0)}}},
		{"load-back-l2-capacity-short", spec.AdmissionRoundInput{Config: admissionCfg(64, 16384, p64(8192), &spec.CPAdmission{MaxTotalCachedTokens: p64(4096)}), Pool: big,
			Queue: []spec.Request{admissionReq("a", 0, 4096, 64, 16), admissionReq("b", 0, 4096, 64, 16)}, L2LoadBackCapacity: p64(0)}},
		{"cp-max-requests", spec.AdmissionRoundInput{Config: admissionCfg(1, 65536, nil, &spec.CPAdmission{MaxRequests: p64(2)}), Pool: big, Queue: admissionReqs(3, 0, 0, 10, 0)}},
		{"cp-buffer-gate", spec.AdmissionRoundInput{Config: admissionCfg(1, 65536, nil, &spec.CPAdmission{MaxBufferSizeBytes: p64(2000),
			BufferModel: &spec.LinearBuffer{PerRequest: 100, PerExtendToken: 1}}), Pool: big, Queue: admissionReqs(3, 0, 0, 800, 0)}},
		{"cp-buffer-single-oversized-warns", spec.AdmissionRoundInput{Config: admissionCfg(1, 65536, nil, &spec.CPAdmission{MaxBufferSizeBytes: p64(10),
			BufferModel: &spec.LinearBuffer{PerExtendToken: 1}}), Pool: big, Queue: admissionReqs(2, 0, 0, 800, 0)}},
		{"max-running", spec.AdmissionRoundInput{Config: func() spec.AdderConfig { c := admissionCfg(1, 8192, nil, nil); c.MaxRunningRequests = 2; return c }(),
			Pool: big, Running: []spec.RunningReq{{MaxNewTokens: 100, OutputLen: 3}}, Queue: admissionReqs(3, 0, 0, 10, 0)}},
		{"lock-time-evictable-short", spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, nil, nil), Pool: spec.PoolState{Available: 100000, Evictable: 10},
			Queue: []spec.Request{{RID: "x", InputLen: 100, L1Prefix: 50, L1PrefixEvictable: 20}}}},
		{"empty-queue", spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, p64(100), &spec.CPAdmission{}), Pool: big}},
		{"cp-buffer-gate-a2-estimator-x2", admissionX2()},
	}
	return cs
}

// admissionRejects names the boundary cases ref must refuse: the lock-time
// check, every §A1.14 row the generator does not draw (each refused by
// ValidateAdmissionRound before any request is walked) and the C5 estimator's
// overflow, which fails the whole round.
func admissionRejects() map[string]*spec.Sentinel {
	return map[string]*spec.Sentinel{
		"lock-time-evictable-short":                 spec.ErrEvictableShort,
		"bad-l2-load-back-capacity-negative":        spec.ErrNegative,
		"bad-running-max-new-tokens-negative":       spec.ErrNegative,
		"bad-running-output-len-over-2^40":          spec.ErrTooLarge,
		"bad-chunked-input-len-zero":                spec.ErrAdmitRequest,
		"bad-chunked-host-hit-set":                  spec.ErrAdmitRequest,
		"bad-cp-max-buffer-size-zero":               spec.ErrAdmitConfig,
		"bad-cp-buffer-model-coefficient":           spec.ErrAdmitConfig,
		"bad-cp-estimator-and-buffer-model":         spec.ErrAdmitConfig,
		"bad-cp-estimator-context":                  spec.ErrEstimatorParam,
		"bad-cp-buffer-limit-without-estimator":     spec.ErrAdmitConfig,
		"cp-buffer-linear-estimate-overflows-int64": spec.ErrOverflow,
	}
}

// admissionFailureCases pins the failure paths of §A1.14 and §A1.9 C5 that
// the generators reach only by chance or not at all, one case per path,
// each an otherwise valid round, plus budget_state's cur_rem_tokens stop.
func admissionFailureCases() []Case[spec.AdmissionRoundInput] {
	big := spec.PoolState{Available: 1_000_000}
	one := []spec.Request{admissionReq("r1", 0, 0, 100, 0)}
	cfg := admissionCfg(1, 8192, nil, nil)
	round := func(cp *spec.CPAdmission, f func(*spec.AdmissionRoundInput)) spec.AdmissionRoundInput {
		in := spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, nil, cp), Pool: big, Queue: one}
		if f != nil {
			f(&in)
		}
		return in
	}
	badCtx := ref.DefaultEstimatorContext(64, 2)
	badCtx.VocabSize = 0
	goodCtx := ref.DefaultEstimatorContext(64, 2)
	return []Case[spec.AdmissionRoundInput]{
		// A running request past its max_new_tokens has a negative decode
		// reservation (§A1.3 does not clamp it), so rem_total_tokens stays
		// above cur_rem_tokens: the admitted request empties cur_rem first
		// and budget_state stops with NO_TOKEN/budget_current.
		{"budget-current-negative-running-offset", spec.AdmissionRoundInput{Config: cfg, Pool: spec.PoolState{Available: 1000},
			Running: []spec.RunningReq{{MaxNewTokens: 0, OutputLen: 1000}}, Queue: []spec.Request{admissionReq("r1", 0, 0, 1000, 0)}}},
		// A retracted request past its own limit (output 20 > max_new 10)
		// reserves max(10 − 20, 0) = 0: total_tokens 1000 < rem_total_tokens
		// 1001, admitted one token before the stop (a reach class of issue 30).
		{"queued-past-its-limit-one-below-the-stop", spec.AdmissionRoundInput{Config: cfg, Pool: spec.PoolState{Available: 1001},
			Queue: []spec.Request{{RID: "r1", InputLen: 1000, MaxNewTokens: 10, OutputLen: 20}}}},
		// §A1.14's rows the invalid generator does not draw, in ValidateAdmissionRound's order.
		{"bad-l2-load-back-capacity-negative", round(nil, func(in *spec.AdmissionRoundInput) { in.L2LoadBackCapacity = p64(-1) })},
		{"bad-running-max-new-tokens-negative", round(nil, func(in *spec.AdmissionRoundInput) { in.Running = []spec.RunningReq{{MaxNewTokens: -1}} })},
		{"bad-running-output-len-over-2^40", round(nil, func(in *spec.AdmissionRoundInput) {
			in.Running = []spec.RunningReq{{MaxNewTokens: 10, OutputLen: spec.MaxAdmitTokens + 1}}
		})},
		{"bad-chunked-input-len-zero", round(nil, func(in *spec.AdmissionRoundInput) { in.Chunked = &spec.Request{RID: "c"} })},
		{"bad-chunked-host-hit-set", round(nil, func(in *spec.AdmissionRoundInput) {
			in.Chunked = &spec.Request{RID: "c", InputLen: 100, L1Prefix: 10, HostHit: 20}
		})},
		{"bad-cp-max-buffer-size-zero", round(&spec.CPAdmission{MaxBufferSizeBytes: p64(0), BufferModel: &spec.LinearBuffer{}}, nil)},
		{"bad-cp-buffer-model-coefficient", round(&spec.CPAdmission{MaxBufferSizeBytes: p64(1000),
			BufferModel: &spec.LinearBuffer{PerExtendToken: spec.MaxLinearBufferCoeff + 1}}, nil)},
		{"bad-cp-estimator-and-buffer-model", round(&spec.CPAdmission{MaxBufferSizeBytes: p64(1000),
			BufferModel: &spec.LinearBuffer{}, EstimatorContext: &goodCtx}, nil)},
		{"bad-cp-estimator-context", round(&spec.CPAdmission{MaxBufferSizeBytes: p64(1000), EstimatorContext: &badCtx}, nil)},
		{"bad-cp-buffer-limit-without-estimator", round(&spec.CPAdmission{MaxBufferSizeBytes: p64(1000)}, nil)},
		{"cp-buffer-linear-estimate-overflows-int64", admissionLinearOverflow()},
	}
}

// admissionLinearOverflow is gate C5's estimator failing on a non-empty
// batch: the linear model at its largest coefficient over 129 requests
// with a prefix of 2^40−1 tokens each. 128 terms of 2^16·(2^40−1) still fit
// int64; the 129th candidate's sum does not, and the limit (int64's
// maximum) never stops the walk first, so the round fails with
// ErrOverflow at buffer_estimate.batch[128].
func admissionLinearOverflow() spec.AdmissionRoundInput {
	const n = 129
	q := make([]spec.Request, n)
	for i := range q {
		q[i] = admissionReq(fmt.Sprintf("r%d", i), spec.MaxAdmitTokens-1, 0, 1, 0)
	}
	c := admissionCfg(1, 1<<20, nil, &spec.CPAdmission{MaxBufferSizeBytes: p64(math.MaxInt64),
		BufferModel: &spec.LinearBuffer{PerPrefixToken: spec.MaxLinearBufferCoeff}})
	return spec.AdmissionRoundInput{Config: c, Pool: spec.PoolState{Available: 1_000_000}, Queue: q}
}

// admissionX2 is A2.5 X2 through the adder's buffer gate on A2's real
// estimator (config.cp.estimator): X1 alone is 111,188,480 bytes, two are
// 423,703,552 > 128 MiB, so the second stops with cp_max_buffer_size.
func admissionX2() spec.AdmissionRoundInput {
	ctx := ref.DefaultEstimatorContext(64, 2)
	ctx.TransferEnabled, ctx.TransferLayers = true, 79
	x1 := spec.Request{InputLen: 12288, L1Prefix: 8192, L1PrefixEvictable: 8192}
	a, b := x1, x1
	a.RID, b.RID = "x1", "x2"
	return spec.AdmissionRoundInput{Config: admissionCfg(64, 1<<20, nil, &spec.CPAdmission{MaxBufferSizeBytes: p64(128 << 20), EstimatorContext: &ctx}),
		Pool: spec.PoolState{Available: 1 << 20, Evictable: 1 << 15}, Queue: []spec.Request{a, b}}
}

// admissionE2Script is §A1.12 E2 as two rounds.
func admissionE2Script() spec.AdmissionScriptInput {
	pool := spec.PoolState{Available: 1_000_000}
	return spec.AdmissionScriptInput{Config: admissionCfg(64, 16384, p64(1000), nil), Steps: []spec.AdmissionStep{
		{Pool: pool, Queue: []spec.Request{admissionReq("r1", 0, 0, 10000, 16), admissionReq("r2", 0, 0, 100, 0)}},
		{Pool: pool, Queue: []spec.Request{admissionReq("r2", 0, 0, 100, 0)}},
	}}
}

// admissionRegressions are §A1.15's minimal inputs, named as their mutants.
func admissionRegressions() []Case[spec.AdmissionRoundInput] {
	big := spec.PoolState{Available: 1_000_000}
	return []Case[spec.AdmissionRoundInput]{
		{"cached-gate-before-load-back", spec.AdmissionRoundInput{Config: admissionCfg(64, 16384, nil, &spec.CPAdmission{MaxTotalCachedTokens: p64(4096)}),
			Pool: spec.PoolState{Available: 100000}, Queue: []spec.Request{admissionReq("A", 0, 4096, 64, 16), admissionReq("B", 0, 4096, 64, 16)}}},
		{"cp-gates-on-empty-batch", spec.AdmissionRoundInput{Config: admissionCfg(64, 16384, nil, &spec.CPAdmission{MaxTotalCachedTokens: p64(2048)}), Pool: big,
			Queue: []spec.Request{admissionReq("r1", 0, 4096, 64, 0)}}},
		{"cp-no-legacy-lift", spec.AdmissionRoundInput{Config: admissionCfg(1, 4096, nil, &spec.CPAdmission{MaxTotalExtendTokens: p64(16384)}), Pool: big, Queue: admissionReqs(8, 0, 0, 3000, 0)}},
		{"cp-user-limit-uncapped", spec.AdmissionRoundInput{Config: admissionCfg(1, 16384, p64(8192), &spec.CPAdmission{MaxTotalExtendTokens: p64(32768)}), Pool: big, Queue: []spec.Request{}}},
		{"cp-limit-not-defaulted", spec.AdmissionRoundInput{Config: admissionCfg(1, 16384, p64(8192), &spec.CPAdmission{}), Pool: big, Queue: []spec.Request{}}},
		{"lock-recheck-skipped", spec.AdmissionRoundInput{Config: admissionCfg(1, 8192, nil, nil), Pool: spec.PoolState{Available: 1000, Evictable: 200},
			Queue: []spec.Request{{RID: "r1", InputLen: 1300, L1Prefix: 200, L1PrefixEvictable: 200}}}},
	}
}

// admissionEntries splits the batch into the continuing chunk (if it ran) and
// the entries admitted from the queue.
func admissionEntries(in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) (cont *spec.AdmittedReq, fromQueue []spec.AdmittedReq) {
	if in.Chunked != nil && len(out.Admitted) > 0 && out.Admitted[0].RID == in.Chunked.RID {
		return &out.Admitted[0], out.Admitted[1:]
	}
	return nil, out.Admitted
}

// admissionMaxNew is the max_new the adder charged for entry a (0 when chunked).
func admissionMaxNew(in spec.AdmissionRoundInput, a spec.AdmittedReq, i int) int64 {
	if a.Chunked {
		return 0
	}
	if i < 0 {
		return ref.ChargeMaxNew(in.Chunked.MaxNewTokens)
	}
	return ref.ChargeMaxNew(in.Queue[i].MaxNewTokens)
}

// admissionBudgetConservation is A1.13.1: every budget moved by exactly the sum
// of page-ceiled charges (and charged max_new for rem_total).
func admissionBudgetConservation(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	b := ref.InitialBudgets(in.Config)
	cont, fromQueue := admissionEntries(in, out)
	var sum int64
	off := float64(in.Config.MixedDecodeTokens)
	for _, r := range in.Running {
		off += ref.RunningOffset(r, in.Config.NewTokenRatio)
	}
	add := func(a spec.AdmittedReq, i int) {
		sum += a.ChargedExtend
		off += float64(a.ChargedExtend + admissionMaxNew(in, a, i))
	}
	if cont != nil {
		add(*cont, -1)
	}
	for i, a := range fromQueue {
		add(a, i)
	}
	if out.RemInputTokens != b.RemInput-sum || out.LogInputTokens != sum {
		return fmt.Errorf("rem_input %d (log_input %d), want %d − Σ charges %d", out.RemInputTokens, out.LogInputTokens, b.RemInput, sum)
	}
	if (b.RemChunk == nil) != (out.RemChunkTokens == nil) || (b.RemChunk != nil && *out.RemChunkTokens != *b.RemChunk-sum) {
		return fmt.Errorf("rem_chunk %v, want %v − %d", out.RemChunkTokens, b.RemChunk, sum)
	}
	pool := out.Pool.Available + out.Pool.Evictable
	if out.CurRemTokens != pool-in.Config.MixedDecodeTokens-sum {
		return fmt.Errorf("cur_rem %d, want pool %d − mixed − %d", out.CurRemTokens, pool, sum)
	}
	if want := float64(pool) - off; out.RemTotalTokens != want {
		return fmt.Errorf("rem_total %v, want %v", out.RemTotalTokens, want)
	}
	return nil
}

// admissionFailurePurity is A1.13.2: the pool lost exactly the admitted
// requests' locks and load-backs; a refused request left at most its
// load-back behind, as evictable slots.
func admissionFailurePurity(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	_, fromQueue := admissionEntries(in, out)
	var locked, loaded int64
	for i, a := range fromQueue {
		locked += in.Queue[i].L1PrefixEvictable
		loaded += a.LoadedFromL2
		if a.LoadedFromL2 != 0 && a.LoadedFromL2 != in.Queue[i].HostHit {
			return fmt.Errorf("%s loaded %d of host hit %d: load-back is all or nothing", a.RID, a.LoadedFromL2, in.Queue[i].HostHit)
		}
	}
	before := in.Pool.Available + in.Pool.Evictable
	if after := out.Pool.Available + out.Pool.Evictable; after != before-locked-loaded {
		return fmt.Errorf("pool %d after, want %d − locks %d − loads %d", after, before, locked, loaded)
	}
	stray := out.L2Loaded - loaded
	if stray == 0 {
		return nil
	}
	k := len(fromQueue)
	if out.Stop.Admitted || k >= len(in.Queue) || in.Queue[k].RID != out.Stop.RID || stray != in.Queue[k].HostHit {
		return fmt.Errorf("%d tokens loaded back outside the batch, not by the refused stopping request", stray)
	}
	if out.Pool.Evictable < stray {
		return fmt.Errorf("refused load-back of %d not returned as evictable (evictable %d)", stray, out.Pool.Evictable)
	}
	return nil
}

// admissionPageAlignment is A1.13.3.
func admissionPageAlignment(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	ps := in.Config.PageSize
	_, fromQueue := admissionEntries(in, out)
	for _, a := range out.Admitted {
		if a.ChargedExtend%ps != 0 {
			return fmt.Errorf("%s charged %d, not a multiple of page %d", a.RID, a.ChargedExtend, ps)
		}
	}
	for _, a := range fromQueue {
		if !a.Chunked {
			continue
		}
		if a.RunExtend%ps != 0 || a.RunExtend < ps {
			return fmt.Errorf("%s cut at %d: want a positive multiple of page %d", a.RID, a.RunExtend, ps)
		}
		if al := in.Config.TruncationAlignSize; al != nil && a.RunExtend%*al != 0 {
			return fmt.Errorf("%s cut at %d: not a multiple of truncation_align_size %d", a.RID, a.RunExtend, *al)
		}
	}
	return nil
}

// admissionMonotonicBudgets is A1.13.4 at round granularity: the compute and
// chunk budgets only shrink.
func admissionMonotonicBudgets(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	b := ref.InitialBudgets(in.Config)
	if out.RemInputTokens > b.RemInput || (b.RemChunk != nil && out.RemChunkTokens != nil && *out.RemChunkTokens > *b.RemChunk) {
		return fmt.Errorf("a budget grew: rem_input %d of %d, rem_chunk %v of %v", out.RemInputTokens, b.RemInput, out.RemChunkTokens, b.RemChunk)
	}
	for _, a := range out.Admitted {
		if a.ChargedExtend < 0 || a.RunExtend < 0 {
			return fmt.Errorf("%s has a negative charge %+v", a.RID, a)
		}
	}
	return nil
}

// admissionQueueOrder is A1.13.5.
func admissionQueueOrder(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	_, fromQueue := admissionEntries(in, out)
	if len(fromQueue) > len(in.Queue) {
		return fmt.Errorf("%d admitted from a queue of %d", len(fromQueue), len(in.Queue))
	}
	for i, a := range fromQueue {
		if a.RID != in.Queue[i].RID {
			return fmt.Errorf("admitted[%d] is %s, want queue order %s", i, a.RID, in.Queue[i].RID)
		}
	}
	k := len(fromQueue)
	switch {
	case out.Stop.Detail == spec.DetailQueueExhausted:
		if k != len(in.Queue) || out.Stop.RID != "" || out.Stop.Admitted {
			return fmt.Errorf("queue_exhausted after %d of %d (stop %+v)", k, len(in.Queue), out.Stop)
		}
	case out.Stop.Admitted:
		if k == 0 || fromQueue[k-1].RID != out.Stop.RID {
			return fmt.Errorf("admitted stopping request %s is not last", out.Stop.RID)
		}
	default:
		if k >= len(in.Queue) || in.Queue[k].RID != out.Stop.RID {
			return fmt.Errorf("refused stopping request %s is not the next in queue", out.Stop.RID)
		}
	}
	return nil
}

// admissionOneChunk is A1.13.6 and §A1.10's "at most one of the two is
// non-nil". The cut is the last entry when truncation_align_size is unset:
// the leftover chunk budget is then under one page, and every later
// request needs at least a page. With an alignment the cut can leave
// whole pages that a smaller later request fits in entirely, as upstream
// allows (docs/spec/admission-serving.md §A1.13, amendment), so only "at most one" is required then.
func admissionOneChunk(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	cont, fromQueue := admissionEntries(in, out)
	n := 0
	for i, a := range fromQueue {
		if a.Chunked {
			n++
			if i != len(fromQueue)-1 && in.Config.TruncationAlignSize == nil {
				return fmt.Errorf("chunked %s is not last (no truncation alignment)", a.RID)
			}
		}
	}
	if cont != nil && cont.Chunked {
		n++
	}
	if n > 1 {
		return fmt.Errorf("%d chunked entries in one round", n)
	}
	if n == 1 && out.NextChunkedRID == "" {
		return fmt.Errorf("a chunked entry but no next_chunked_rid")
	}
	return nil
}

// admissionCPBounds is A1.13.7: CP limits hold for every batch of two or more.
func admissionCPBounds(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	cp := in.Config.CP
	if cp == nil {
		if out.CumExtend != 0 || out.CumCached != 0 || out.EffectiveCPExtendLimit != nil {
			return fmt.Errorf("CP totals reported without CP")
		}
		return nil
	}
	n := int64(len(out.Admitted))
	if cp.MaxRequests != nil && n > *cp.MaxRequests {
		return fmt.Errorf("%d admitted > max_requests %d", n, *cp.MaxRequests)
	}
	var cached int64
	for _, a := range out.Admitted {
		cached += a.PrefixLen
	}
	if cached != out.CumCached {
		return fmt.Errorf("cum_cached %d, want Σ prefix_len after load-back %d", out.CumCached, cached)
	}
	if n < 2 {
		return nil
	}
	if l := out.EffectiveCPExtendLimit; l != nil && out.CumExtend > *l {
		return fmt.Errorf("cum_extend %d > limit %d", out.CumExtend, *l)
	}
	if m := cp.MaxTotalCachedTokens; m != nil && out.CumCached > *m {
		return fmt.Errorf("cum_cached %d > max %d", out.CumCached, *m)
	}
	if est := ref.BufferEstimatorOf(cp); est != nil {
		batch := make([]spec.PlannedEntry, 0, len(out.Admitted))
		for _, a := range out.Admitted {
			batch = append(batch, spec.PlannedEntry{PrefixLen: a.PrefixLen, RunExtend: a.RunExtend})
		}
		if b, err := est(batch); err != nil || b > *cp.MaxBufferSizeBytes {
			return fmt.Errorf("buffer estimate %d (%v) > max %d", b, err, *cp.MaxBufferSizeBytes)
		}
	}
	return nil
}

// admissionInertness is A1.13.8: CP with every knob unset and chunking off
// decides exactly as the CP-free adder.
func admissionInertness(lim spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	cp := in.Config.CP
	if cp == nil || cp.MaxRequests != nil || cp.MaxTotalExtendTokens != nil || cp.MaxTotalCachedTokens != nil || cp.MaxBufferSizeBytes != nil ||
		ref.InitialBudgets(in.Config).RemChunk != nil {
		return nil
	}
	plain := in
	plain.Config.CP = nil
	want, err := ref.AdmissionRound(lim, plain)
	if err != nil {
		return fmt.Errorf("CP-free round refused: %v", err)
	}
	got := out
	got.CumExtend, got.CumCached, got.EffectiveCPExtendLimit = 0, 0, nil
	if d := cmp.Diff(want, got); d != "" {
		return fmt.Errorf("inert CP differs from the CP-free adder (-plain +cp):\n%s", d)
	}
	return nil
}

// admissionLiftBound is A1.13.9 and C1's table, recomputed here from the config.
func admissionLiftBound(_ spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	c := in.Config
	if c.CP == nil {
		return nil
	}
	legacy := c.MaxPrefillTokens - c.MixedDecodeTokens
	var chunk *int64
	if c.ChunkedPrefillSize != nil && *c.ChunkedPrefillSize > 0 {
		chunk = p64(*c.ChunkedPrefillSize - c.MixedDecodeTokens)
	}
	var want *int64
	switch user := c.CP.MaxTotalExtendTokens; {
	case user != nil && chunk != nil:
		want = p64(min(*user, *chunk))
	case user != nil:
		want = user
	default:
		want = chunk
	}
	if !cmp.Equal(want, out.EffectiveCPExtendLimit) {
		return fmt.Errorf("effective_cp_extend_limit %v, want %v", out.EffectiveCPExtendLimit, want)
	}
	var sum int64
	for _, a := range out.Admitted {
		sum += a.ChargedExtend
	}
	init := out.RemInputTokens + sum
	wantInit := legacy
	if want != nil {
		wantInit = max(legacy, *want)
	}
	if init != wantInit || (chunk != nil && init > max(legacy, *chunk)) {
		return fmt.Errorf("rem_input at construction %d, want max(%d, limit %v) <= max(legacy, chunk %v)", init, legacy, want, chunk)
	}
	return nil
}

// admissionSingleAlone: a lone request (nothing running, no chunk) is refused
// only for memory or for a chunk budget that cannot hold one page (or one
// alignment unit) — never by a CP gate or the compute budget (no deadlock).
func admissionSingleAlone(lim spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	if len(in.Running) > 0 || in.Chunked != nil || len(in.Queue) == 0 || len(out.Admitted) > 0 {
		return nil
	}
	switch out.Stop.Detail {
	case spec.DetailRemTotal, spec.DetailRemChunk, spec.DetailTruncationAlign:
		return nil
	}
	return fmt.Errorf("first request %s refused alone with %s/%s", in.Queue[0].RID, out.Stop.Result, out.Stop.Detail)
}

// admissionBudgetRaises are the budgets whose raise must never shrink the batch.
var admissionBudgetRaises = []struct {
	name  string
	raise func(*spec.AdderConfig)
}{
	{"max_prefill_tokens", func(c *spec.AdderConfig) { c.MaxPrefillTokens = raise(c.MaxPrefillTokens) }},
	{"max_running_requests", func(c *spec.AdderConfig) { c.MaxRunningRequests = raise(c.MaxRunningRequests) }},
	{"cp.max_requests", func(c *spec.AdderConfig) { c.CP.MaxRequests = raiseKnob(c.CP.MaxRequests) }},
	{"cp.max_total_extend_tokens", func(c *spec.AdderConfig) { c.CP.MaxTotalExtendTokens = raiseKnob(c.CP.MaxTotalExtendTokens) }},
	{"cp.max_total_cached_tokens", func(c *spec.AdderConfig) { c.CP.MaxTotalCachedTokens = raiseKnob(c.CP.MaxTotalCachedTokens) }},
	{"cp.max_buffer_size_bytes", func(c *spec.AdderConfig) { c.CP.MaxBufferSizeBytes = raiseKnob(c.CP.MaxBufferSizeBytes) }},
}

func raise(v int64) int64 { return min(2*v+1, spec.MaxAdmitTokens) }

func raiseKnob(v *int64) *int64 {
	if v == nil {
		return nil
	}
	return p64(raise(*v))
}

// admissionMonotoneInBudgets: raising any one budget (compute, running cap, or a
// CP knob) admits the same requests first, then possibly more.
func admissionMonotoneInBudgets(lim spec.Limits, in spec.AdmissionRoundInput, out spec.AdmissionRoundOutput) error {
	for _, b := range admissionBudgetRaises {
		if in.Config.CP == nil && b.name[:3] == "cp." {
			continue
		}
		up := in
		if in.Config.CP != nil {
			cp := *in.Config.CP
			up.Config.CP = &cp
		}
		b.raise(&up.Config)
		got, err := ref.AdmissionRound(lim, up)
		if err != nil {
			return fmt.Errorf("raised %s refused: %v", b.name, err)
		}
		if len(got.Admitted) < len(out.Admitted) {
			return fmt.Errorf("raising %s admitted %d, fewer than %d", b.name, len(got.Admitted), len(out.Admitted))
		}
		for i, a := range out.Admitted {
			if got.Admitted[i].RID != a.RID {
				return fmt.Errorf("raising %s changed admitted[%d] from %s to %s", b.name, i, a.RID, got.Admitted[i].RID)
			}
		}
	}
	return nil
}

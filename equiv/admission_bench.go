package equiv

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionBench is the differential spec of admission.bench
// (docs/spec/admission-serving.md §A3) with the A3.5 properties.
func AdmissionBench() *Spec[spec.AdmissionBenchInput, spec.AdmissionBenchOutput] {
	return &Spec[spec.AdmissionBenchInput, spec.AdmissionBenchOutput]{
		Op:          catalog.AdmissionBench(),
		Valid:       rapid.Custom(BenchValid),
		Invalid:     rapid.Custom(benchInvalid),
		Boundary:    append(benchBoundary(), benchFailureCases()...),
		Regressions: []Case[spec.AdmissionBenchInput]{{"bench-l2-hits-as-l1", BenchA37()}},
		Rejects: map[string]*spec.Sentinel{"evictable-short-at-lock": spec.ErrEvictableShort,
			"bad-queue-window-negative": spec.ErrNegative, "bad-request-lengths-sum-over-2^40": spec.ErrTooLarge,
			"continuing-chunk-estimate-overflows": spec.ErrOverflow},
		Props: BenchProps(),
	}
}

// BenchProps are A3.5's invariants, each checked on one bench output.
func BenchProps() []Prop[spec.AdmissionBenchInput, spec.AdmissionBenchOutput] {
	return []Prop[spec.AdmissionBenchInput, spec.AdmissionBenchOutput]{
		{"A3.5.1-each-request-admitted-once-unless-chunked", benchOnce},
		{"A3.5.2-l2-capacity-conserved", benchL2Conserved},
		{"A3.5.3-rounds-replay-through-admit-round", benchReplay},
		{"A3.5.4-no-cp-detail-without-cp", benchNoCPDetail},
	}
}

// BenchA37 is A3.7's minimal input: A3.2 with no fake L2 capacity, so both
// load-backs fail; fixed, b is chunked to 4032 with cached 0; with A3-B1,
// both count 4096 cached and b stops on cp_max_total_cached_tokens.
func BenchA37() spec.AdmissionBenchInput {
	in := catalog.AdmissionBenchA32()
	in.FakeL2LoadBackCapacity = 0
	return in
}

func benchBoundary() []Case[spec.AdmissionBenchInput] {
	a32 := catalog.AdmissionBenchA32
	with := func(f func(*spec.AdmissionBenchInput)) spec.AdmissionBenchInput { in := a32(); f(&in); return in }
	return []Case[spec.AdmissionBenchInput]{
		{"a3.2-example", a32()},
		{"a3.7-no-l2-capacity", BenchA37()},
		{"cp-null-no-cp-details", with(func(in *spec.AdmissionBenchInput) { in.CP = nil })},
		{"buffer-gate-off-estimate-0", with(func(in *spec.AdmissionBenchInput) { in.CP.MaxBufferSize = nil })},
		{"buffer-size-as-integer", with(func(in *spec.AdmissionBenchInput) { s := spec.ByteSize("4066936"); in.CP.MaxBufferSize = &s })},
		{"max-rounds-1", with(func(in *spec.AdmissionBenchInput) { in.MaxRounds = 1 })},
		{"stalled-no-memory", with(func(in *spec.AdmissionBenchInput) { in.FakeL1 = spec.PoolState{Available: 100} })},
		{"no-requests-drained-at-once", with(func(in *spec.AdmissionBenchInput) { in.Requests = []spec.BenchRequest{} })},
		{"queue-window-1", with(func(in *spec.AdmissionBenchInput) { in.QueueWindow = 1; in.CP.MaxTotalCachedTokens = nil })},
		{"l1-hit-locked-from-evictable", with(func(in *spec.AdmissionBenchInput) {
			in.FakeL1.Evictable = 1024
			in.Requests[0].L1CachedTokens, in.Requests[1].L1CachedTokens = 512, 512
		})},
	}
}

// benchFailureCases pins A3.6's rows the invalid generator does not draw
// and the failure of a round's A3.4 record: the estimate of a batch that
// holds only the continuing chunk, which no gate priced (A1.7 admits it
// before the queue walk).
func benchFailureCases() []Case[spec.AdmissionBenchInput] {
	with := func(f func(*spec.AdmissionBenchInput)) spec.AdmissionBenchInput {
		in := catalog.AdmissionBenchA32()
		f(&in)
		return in
	}
	return []Case[spec.AdmissionBenchInput]{
		{"bad-queue-window-negative", with(func(in *spec.AdmissionBenchInput) { in.QueueWindow = -1 })},
		{"bad-request-lengths-sum-over-2^40", with(func(in *spec.AdmissionBenchInput) { in.Requests[1].L1CachedTokens = spec.MaxAdmitTokens })},
		{"continuing-chunk-estimate-overflows", benchChunkEstimateOverflow()},
	}
}

// benchChunkEstimateOverflow: one request of 2,000 tokens, chunk 1,000,
// 6·10^15 MLA bytes per row. Round 0 cuts it at 1,000 (1,000 rows: 6·10^18
// bytes, within int64, so the lone request's gate and the record price it);
// round 1 runs the continuing chunk alone over 2,000 rows, 1.2·10^19 bytes,
// and the bench fails with the estimator's overflow.
func benchChunkEstimateOverflow() spec.AdmissionBenchInput {
	size := spec.ByteSize("2GiB")
	return spec.AdmissionBenchInput{PageSize: 1, CPSize: 1, MaxPrefillTokens: 1000, ChunkedPrefillSize: p64(1000), NewTokenRatio: 0.7,
		MaxRunningRequests: 8, FakeL1: spec.PoolState{Available: 100000}, MaxRounds: 4, Deterministic: true,
		CP:       &spec.BenchCP{MaxBufferSize: &size, Estimator: &spec.BenchEstimator{MLARowBytes: p64(6_000_000_000_000_000)}},
		Requests: []spec.BenchRequest{{RID: "a", ExtendTokens: 2000}}}
}

// BenchValid draws a bench: A1's configuration space, every CP knob, the
// buffer gate over A2's estimator (cap kinds included), small fake L1/L2
// capacities, an L1-evictable pool large enough for every lock even after
// load-backs evicted from it, and up
// to ten requests with L1 and L2 hits around the load-back threshold.
func BenchValid(t *rapid.T) spec.AdmissionBenchInput {
	ps := rapid.SampledFrom([]int64{1, 16, 64}).Draw(t, "page_size")
	in := spec.AdmissionBenchInput{
		PageSize: ps, CPSize: rapid.Int64Range(1, 8).Draw(t, "cp_size"),
		MaxPrefillTokens:       rapid.Int64Range(64, 20000).Draw(t, "max_prefill"),
		NewTokenRatio:          rapid.SampledFrom([]float64{0, 0.7, 1}).Draw(t, "ratio"),
		MaxRunningRequests:     rapid.Int64Range(1, 12).Draw(t, "max_running"),
		HierarchicalCache:      rapid.Bool().Draw(t, "hicache"),
		FakeL1:                 spec.PoolState{Available: rapid.Int64Range(0, 200000).Draw(t, "l1_available")},
		FakeL2LoadBackCapacity: rapid.Int64Range(0, 20000).Draw(t, "l2_capacity"),
		MaxRounds:              rapid.Int64Range(1, 20).Draw(t, "max_rounds"),
		QueueWindow:            rapid.SampledFrom([]int64{0, 0, 1, 3}).Draw(t, "window"),
		Deterministic:          true,
		Requests:               []spec.BenchRequest{},
	}
	if rapid.Bool().Draw(t, "chunking") {
		in.ChunkedPrefillSize = p64(rapid.Int64Range(1, 12000).Draw(t, "chunk"))
	}
	if rapid.IntRange(0, 2).Draw(t, "cp_on") > 0 {
		in.CP = benchCPDraw(t)
	}
	switch rapid.IntRange(0, 3).Draw(t, "mqa_cap") {
	case 0:
		in.MQAChunk.MaxRows = p64(rapid.Int64Range(1, 4096).Draw(t, "max_rows"))
	case 1:
		gb := rapid.SampledFrom([]float64{0.001, 0.01, 1}).Draw(t, "max_gb")
		in.MQAChunk.MaxGB = &gb
	}
	var locks int64
	for i := range rapid.IntRange(0, 10).Draw(t, "requests") {
		r := spec.BenchRequest{RID: fmt.Sprintf("q%d", i), ExtendTokens: rapid.Int64Range(1, 6000).Draw(t, "extend"),
			MaxNewTokens: rapid.Int64Range(0, 5000).Draw(t, "max_new")}
		if rapid.IntRange(0, 2).Draw(t, "l1_on") == 0 {
			r.L1CachedTokens = ps * rapid.Int64Range(1, 4096/ps).Draw(t, "l1_pages")
		}
		switch rapid.IntRange(0, 3).Draw(t, "l2") {
		case 0:
			r.L2HostHitTokens = rapid.Int64Range(1, 12).Draw(t, "l2_small") // around the threshold of 10
		case 1, 2:
			r.L2HostHitTokens = ps * rapid.Int64Range(1, 6000/ps).Draw(t, "l2_pages")
		}
		locks += r.L1CachedTokens + r.L2HostHitTokens // a load-back may evict: keep every lock satisfiable
		in.Requests = append(in.Requests, r)
	}
	in.FakeL1.Evictable = locks + rapid.Int64Range(0, 5000).Draw(t, "l1_evictable_extra")
	return in
}

// benchCPDraw draws A3.2's cp block: each knob on or off, the buffer size
// in bytes or with a unit, the estimator block partly defaulted.
func benchCPDraw(t *rapid.T) *spec.BenchCP {
	knob := func(name string, lo, hi int64) *int64 {
		if rapid.IntRange(0, 2).Draw(t, name+"_on") == 0 {
			return nil
		}
		return p64(rapid.Int64Range(lo, hi).Draw(t, name))
	}
	cp := &spec.BenchCP{MaxRequests: knob("cp_max_requests", 1, 6), MaxTotalExtendTokens: knob("cp_max_extend", 1, 30000),
		MaxTotalCachedTokens: knob("cp_max_cached", 1, 20000)}
	switch rapid.IntRange(0, 2).Draw(t, "buffer") {
	case 0:
		s := spec.ByteSize(fmt.Sprint(rapid.Int64Range(1, 200_000_000).Draw(t, "buffer_bytes")))
		cp.MaxBufferSize = &s
	case 1:
		s := spec.ByteSize(fmt.Sprintf("%d%s", rapid.Int64Range(1, 300).Draw(t, "buffer_n"),
			rapid.SampledFrom([]string{"KB", "MiB", "MB"}).Draw(t, "buffer_unit")))
		cp.MaxBufferSize = &s
	}
	if rapid.Bool().Draw(t, "estimator_on") {
		cp.Estimator = &spec.BenchEstimator{VocabSize: p64(rapid.Int64Range(1, 200000).Draw(t, "vocab")),
			TransferEnabled: rapid.Bool().Draw(t, "transfer"), TransferLayers: rapid.Int64Range(0, 80).Draw(t, "layers"),
			BsGt1L1PrefetchEnabled: rapid.Bool().Draw(t, "prefetch")}
	}
	return cp
}

// benchInvalid draws one A3.6 violation in an otherwise valid bench.
func benchInvalid(t *rapid.T) Bad[spec.AdmissionBenchInput] {
	in := BenchValid(t)
	in.Requests = slices.Clone(in.Requests)
	if len(in.Requests) == 0 {
		in.Requests = append(in.Requests, spec.BenchRequest{RID: "only", ExtendTokens: 1})
	}
	r := &in.Requests[rapid.IntRange(0, len(in.Requests)-1).Draw(t, "at")]
	switch rapid.IntRange(0, 9).Draw(t, "violation") {
	case 0:
		r.ExtendTokens = rapid.Int64Range(-3, 0).Draw(t, "bad_extend")
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrAdmitRequest}
	case 1:
		in.Requests = append(in.Requests, in.Requests[0])
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrDuplicateRID}
	case 2:
		in.FakeL2LoadBackCapacity = rapid.Int64Range(-9, -1).Draw(t, "bad_l2")
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrNegative}
	case 3:
		in.MaxRounds = rapid.SampledFrom([]int64{-1, 0, spec.MaxBenchRounds + 1}).Draw(t, "bad_rounds")
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrBenchConfig}
	case 4:
		r.L2HostHitTokens = rapid.Int64Range(-9, -1).Draw(t, "bad_l2_hit")
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrNegative}
	case 5:
		s := spec.ByteSize(rapid.SampledFrom([]string{"12XB", "0", "-5", "GiB", "0.0000001KB", ""}).Draw(t, "bad_size"))
		in.CP = &spec.BenchCP{MaxBufferSize: &s}
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrBenchConfig}
	case 6:
		in.CPSize = rapid.SampledFrom([]int64{-1, 0, spec.MaxCP + 1}).Draw(t, "bad_cp")
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrBadCPSize}
	case 7:
		in.CP = &spec.BenchCP{MaxRequests: p64(rapid.Int64Range(-2, 0).Draw(t, "bad_knob"))}
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrAdmitConfig}
	case 8:
		in.CP = &spec.BenchCP{Estimator: &spec.BenchEstimator{VocabSize: p64(rapid.Int64Range(-2, 0).Draw(t, "bad_vocab"))}}
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrEstimatorParam}
	default:
		in.Requests = make([]spec.BenchRequest, spec.MaxBenchRequests+1)
		return Bad[spec.AdmissionBenchInput]{in, spec.ErrTooLarge}
	}
}

// benchOnce is A3.5.1: a request is admitted in one round, or in several
// only while chunked (every appearance but the last carries it on); a
// drained bench admitted every request and ends with no chunk.
func benchOnce(_ spec.Limits, in spec.AdmissionBenchInput, out spec.AdmissionBenchOutput) error {
	last := map[string]int{}
	for k, r := range out.Rounds {
		for _, rid := range r.Admitted {
			if j, again := last[rid]; again {
				if c := out.Rounds[j].Chunked; c == nil || *c != rid {
					return fmt.Errorf("%s admitted in rounds %d and %d but not chunked after round %d", rid, j, k, j)
				}
			}
			last[rid] = k
		}
	}
	if out.Termination != spec.BenchDrained {
		return nil
	}
	for _, r := range in.Requests {
		if _, ok := last[r.RID]; !ok {
			return fmt.Errorf("drained but %s was never admitted", r.RID)
		}
	}
	if n := len(out.Rounds); n > 0 && out.Rounds[n-1].Chunked != nil {
		return fmt.Errorf("drained with %s still chunked", *out.Rounds[n-1].Chunked)
	}
	return nil
}

// benchL2Conserved is A3.5.2: loaded + left is the fake capacity in every round.
func benchL2Conserved(_ spec.Limits, in spec.AdmissionBenchInput, out spec.AdmissionBenchOutput) error {
	for k, r := range out.Rounds {
		if r.L2LoadedTokens+r.L2CapacityLeft != in.FakeL2LoadBackCapacity || r.L2CapacityLeft < 0 {
			return fmt.Errorf("round %d: loaded %d + left %d != capacity %d", k, r.L2LoadedTokens, r.L2CapacityLeft, in.FakeL2LoadBackCapacity)
		}
	}
	return nil
}

// benchReplay is A3.5.3: each round, rebuilt from A3.3 alone (fake_l1,
// fresh L2 capacity, the carried chunk, the requests not yet fully
// admitted in input order), run through ref.AdmissionRound directly gives the
// round's batch, stop, carry and budgets; and the bench stops exactly
// where A3.3 says.
func benchReplay(lim spec.Limits, in spec.AdmissionBenchInput, out spec.AdmissionBenchOutput) error {
	cfg := ref.BenchConfig(in)
	done := map[string]bool{}
	var chunked *spec.Request
	for k, r := range out.Rounds {
		rin := spec.AdmissionRoundInput{Config: cfg, Pool: in.FakeL1, Running: []spec.RunningReq{}, Chunked: chunked, Queue: []spec.Request{}}
		l2 := in.FakeL2LoadBackCapacity
		rin.L2LoadBackCapacity = &l2
		for _, q := range in.Requests {
			if !done[q.RID] && (chunked == nil || q.RID != chunked.RID) && (in.QueueWindow == 0 || int64(len(rin.Queue)) < in.QueueWindow) {
				rin.Queue = append(rin.Queue, ref.MapBenchRequest(q))
			}
		}
		res, err := ref.AdmissionRound(lim, rin)
		if err != nil {
			return fmt.Errorf("round %d: AdmitRound refused the replayed input: %v", k, err)
		}
		if err := sameRound(k, r, res, in); err != nil {
			return err
		}
		chunked = ref.NextChunked(rin, res)
		for _, a := range res.Admitted {
			if !a.Chunked {
				done[a.RID] = true
			}
		}
	}
	return benchEnd(in, out, len(done), chunked)
}

// sameRound compares a bench round with the round AdmissionRound gave.
func sameRound(k int, r spec.BenchRound, res spec.AdmissionRoundOutput, in spec.AdmissionBenchInput) error {
	rids := make([]string, 0, len(res.Admitted))
	var cached int64
	for _, a := range res.Admitted {
		rids = append(rids, a.RID)
		cached += a.PrefixLen
	}
	carry := ""
	if r.Chunked != nil {
		carry = *r.Chunked
	}
	switch {
	case !slices.Equal(rids, r.Admitted):
		return fmt.Errorf("round %d: bench admitted %v, AdmitRound %v", k, r.Admitted, rids)
	case r.Stop != res.Stop:
		return fmt.Errorf("round %d: bench stop %+v, AdmitRound %+v", k, r.Stop, res.Stop)
	case carry != res.NextChunkedRID:
		return fmt.Errorf("round %d: bench carries %q, AdmitRound %q", k, carry, res.NextChunkedRID)
	case r.L2LoadedTokens != res.L2Loaded || r.RemInputTokens != res.RemInputTokens || r.TotalExtendTokens != res.LogInputTokens ||
		r.TotalCachedTokens != cached || r.BatchIsFull != res.BatchIsFull:
		return fmt.Errorf("round %d: bench totals %+v differ from AdmitRound %+v", k, r, res)
	case r.DurationUS != 0 && in.Deterministic:
		return fmt.Errorf("round %d: duration_us %d in a deterministic bench", k, r.DurationUS)
	}
	return nil
}

// benchEnd checks the termination and summary against the replay.
func benchEnd(in spec.AdmissionBenchInput, out spec.AdmissionBenchOutput, done int, chunked *spec.Request) error {
	n := int64(len(out.Rounds))
	left := len(in.Requests) - done
	var want string
	switch {
	case left == 0 && chunked == nil:
		want = spec.BenchDrained
	case n > 0 && len(out.Rounds[n-1].Admitted) == 0 && chunked == nil:
		want = spec.BenchStalled
	case n == in.MaxRounds:
		want = spec.BenchMaxRounds
	default:
		return fmt.Errorf("bench ended after %d rounds with %d requests left and no reason", n, left)
	}
	if out.Termination != want {
		return fmt.Errorf("termination %q, want %q", out.Termination, want)
	}
	var stops int64
	for _, c := range out.Summary.StopReasons {
		stops += c
	}
	if out.Summary.Rounds != n || stops != n {
		return fmt.Errorf("summary counts %d rounds and %d stops for %d rounds", out.Summary.Rounds, stops, n)
	}
	return nil
}

// benchNoCPDetail is A3.5.4: with cp null no round stops on a cp_* detail
// (nor reports a CP extend limit).
func benchNoCPDetail(_ spec.Limits, in spec.AdmissionBenchInput, out spec.AdmissionBenchOutput) error {
	if in.CP != nil {
		return nil
	}
	for k, r := range out.Rounds {
		if len(r.Stop.Detail) >= 3 && r.Stop.Detail[:3] == "cp_" || r.EffectiveCPExtendLimit != nil {
			return fmt.Errorf("round %d: cp null but stop %q, limit %v", k, r.Stop.Detail, r.EffectiveCPExtendLimit)
		}
	}
	for d := range out.Summary.StopReasons {
		if len(d) >= 3 && d[:3] == "cp_" {
			return fmt.Errorf("cp null but summary counts %q", d)
		}
	}
	return nil
}

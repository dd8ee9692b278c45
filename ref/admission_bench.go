package ref

// The admission.bench op (docs/spec/admission-serving.md §A3): an offline driver
// that feeds a request list through a twin's round function (AdmissionRound)
// round after round and reports each round's batch, stop reason, L2
// load-back use and buffer estimate. It adds no admission logic (A3.1,
// A3.5.3): it maps bench requests to A1 requests, builds the round input
// and removes what was admitted from the queue. The interpreter is written
// once and takes the twin's functions, as RunAdmissionScript does.

import (
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// MapBenchRequest is A3.2's mapping: InputLen = l1 + l2 + extend, L1Prefix
// = L1PrefixEvictable = l1, HostHit = l2.
func MapBenchRequest(r spec.BenchRequest) spec.Request {
	return spec.Request{RID: r.RID, InputLen: r.L1CachedTokens + r.L2HostHitTokens + r.ExtendTokens, MaxNewTokens: r.MaxNewTokens,
		L1Prefix: r.L1CachedTokens, L1PrefixEvictable: r.L1CachedTokens, HostHit: r.L2HostHitTokens}
}

// benchEstimatorContext is the estimator context a bench's buffer gate
// uses: A2.2's defaults at the bench's page and CP sizes, overridden by
// cp.estimator, with mqa_chunk's caps.
func benchEstimatorContext(in spec.AdmissionBenchInput) spec.EstimatorContext {
	ctx := DefaultEstimatorContext(in.PageSize, in.CPSize)
	ctx.Chunk = in.MQAChunk
	if in.CP == nil || in.CP.Estimator == nil {
		return ctx
	}
	e := in.CP.Estimator
	for _, o := range []struct {
		dst *int64
		v   *int64
	}{{&ctx.MLARowBytes, e.MLARowBytes}, {&ctx.IndexRowBytes, e.IndexRowBytes}, {&ctx.VocabSize, e.VocabSize},
		{&ctx.LogitRowsPerReq, e.LogitRowsPerReq}, {&ctx.DescriptorBytes, e.DescriptorBytes},
		{&ctx.PageDescriptorBytes, e.PageDescriptorBytes}, {&ctx.RowRemapBytes, e.RowRemapBytes}} {
		if o.v != nil {
			*o.dst = *o.v
		}
	}
	ctx.TransferEnabled, ctx.TransferLayers, ctx.BsGt1L1PrefetchEnabled = e.TransferEnabled, e.TransferLayers, e.BsGt1L1PrefetchEnabled
	return ctx
}

// BenchConfig is the A1 configuration every round of a validated bench
// runs under (A3.2's mapping; no mixed decode, no truncation alignment).
func BenchConfig(in spec.AdmissionBenchInput) spec.AdderConfig {
	c := spec.AdderConfig{PageSize: in.PageSize, NewTokenRatio: in.NewTokenRatio, MaxPrefillTokens: in.MaxPrefillTokens,
		ChunkedPrefillSize: in.ChunkedPrefillSize, HierarchicalCache: in.HierarchicalCache, MaxRunningRequests: in.MaxRunningRequests}
	if in.CP == nil {
		return c
	}
	c.CP = &spec.CPAdmission{MaxRequests: in.CP.MaxRequests, MaxTotalExtendTokens: in.CP.MaxTotalExtendTokens,
		MaxTotalCachedTokens: in.CP.MaxTotalCachedTokens}
	if in.CP.MaxBufferSize != nil {
		b, _ := in.CP.MaxBufferSize.Bytes("cp.max_buffer_size") // validated
		ctx := benchEstimatorContext(in)
		c.CP.MaxBufferSizeBytes, c.CP.EstimatorContext = &b, &ctx
	}
	return c
}

// RunAdmissionBench runs A3.3 with a twin's functions: each round starts
// from fake_l1 and a fresh L2 capacity with no running batch, carries only
// the chunked request, and walks the remaining requests in input order
// (the first queue_window of them when set). It ends drained, stalled (a
// round admitted nothing and carried no chunk) or at max_rounds. A round
// the round function refuses (a lock-time evictable shortfall, an
// estimator overflow) fails the bench with that error.
func RunAdmissionBench(lim spec.Limits, in spec.AdmissionBenchInput, d spec.BenchDriver) (spec.AdmissionBenchOutput, error) {
	if err := validateBench(lim, in); err != nil {
		return spec.AdmissionBenchOutput{}, err
	}
	cfg := BenchConfig(in)
	queue := make([]spec.Request, len(in.Requests))
	for i, r := range in.Requests {
		queue[i] = d.Map(r)
	}
	out := spec.AdmissionBenchOutput{Rounds: []spec.BenchRound{}, Summary: spec.BenchSummary{StopReasons: map[spec.StopDetail]int64{}}}
	seen := make(map[string]bool, len(queue))
	var chunked *spec.Request
	for {
		if len(queue) == 0 && chunked == nil {
			out.Termination = spec.BenchDrained
			break
		}
		if int64(len(out.Rounds)) >= in.MaxRounds {
			out.Termination = spec.BenchMaxRounds
			break
		}
		rin := benchRoundInput(in, cfg, chunked, queue)
		t0 := time.Now()
		res, err := d.Round(lim, rin)
		dur := time.Since(t0)
		if err != nil {
			return spec.AdmissionBenchOutput{}, err
		}
		br, err := benchRound(in, cfg, d.Estimate, int64(len(out.Rounds)), res)
		if err != nil {
			return spec.AdmissionBenchOutput{}, err
		}
		if !in.Deterministic {
			br.DurationUS = dur.Microseconds()
		}
		out.Rounds = append(out.Rounds, br)
		out.Summary.StopReasons[res.Stop.Detail]++
		for _, a := range res.Admitted {
			if !seen[a.RID] {
				seen[a.RID] = true
				out.Summary.RequestsAdmitted++
			}
		}
		chunked = NextChunked(rin, res)
		queue = queue[admittedFromQueue(rin, res):]
		if len(res.Admitted) == 0 && chunked == nil {
			out.Termination = spec.BenchStalled
			break
		}
	}
	out.Summary.Rounds = int64(len(out.Rounds))
	return out, nil
}

// benchRoundInput is the round input A3.3 builds from the bench, the
// carried chunk and the remaining queue (windowed by queue_window).
func benchRoundInput(in spec.AdmissionBenchInput, cfg spec.AdderConfig, chunked *spec.Request, queue []spec.Request) spec.AdmissionRoundInput {
	if w := in.QueueWindow; w > 0 && int64(len(queue)) > w {
		queue = queue[:w]
	}
	l2 := in.FakeL2LoadBackCapacity
	return spec.AdmissionRoundInput{Config: cfg, Pool: in.FakeL1, Running: []spec.RunningReq{}, Chunked: chunked, Queue: queue, L2LoadBackCapacity: &l2}
}

// admittedFromQueue is how many queue entries the round admitted: the
// batch less the continuing chunk (Admitted is that chunk, then a prefix
// of the queue, §A1.13.5).
func admittedFromQueue(rin spec.AdmissionRoundInput, res spec.AdmissionRoundOutput) int {
	n := len(res.Admitted)
	if n > 0 && rin.Chunked != nil && res.Admitted[0].RID == rin.Chunked.RID {
		n--
	}
	return n
}

// benchRound is one round's A3.4 record.
func benchRound(in spec.AdmissionBenchInput, cfg spec.AdderConfig, estimate spec.EstimateFunc, k int64, res spec.AdmissionRoundOutput) (spec.BenchRound, error) {
	br := spec.BenchRound{Round: k, Admitted: make([]string, 0, len(res.Admitted)), Stop: res.Stop, BatchIsFull: res.BatchIsFull,
		TotalExtendTokens: res.LogInputTokens, L2LoadedTokens: res.L2Loaded, L2CapacityLeft: in.FakeL2LoadBackCapacity - res.L2Loaded,
		EffectiveCPExtendLimit: res.EffectiveCPExtendLimit, RemInputTokens: res.RemInputTokens}
	reqs := make([]spec.EstimateReq, 0, len(res.Admitted))
	for _, a := range res.Admitted {
		br.Admitted = append(br.Admitted, a.RID)
		br.TotalCachedTokens += a.PrefixLen
		reqs = append(reqs, spec.EstimateReq{PrefixLen: a.PrefixLen, ExtendLen: a.RunExtend})
	}
	if res.NextChunkedRID != "" {
		rid := res.NextChunkedRID
		br.Chunked = &rid
	}
	if cfg.CP != nil && cfg.CP.EstimatorContext != nil {
		est, err := estimate(*cfg.CP.EstimatorContext, reqs)
		if err != nil {
			return spec.BenchRound{}, err
		}
		br.EstimatedBufferBytes = est.TotalBytes
	}
	return br, nil
}

// AdmissionBench is admission.bench on the reference round and estimator.
func AdmissionBench(lim spec.Limits, in spec.AdmissionBenchInput) (spec.AdmissionBenchOutput, error) {
	return RunAdmissionBench(lim, in, spec.BenchDriver{Round: AdmissionRound, Estimate: EstimateBuffers, Map: MapBenchRequest})
}

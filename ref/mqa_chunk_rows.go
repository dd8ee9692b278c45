package ref

import (
	"errors"
	"math"
	"math/bits"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// This file is mqa.chunk_rows (docs/spec/cp-layout.md §8.1, §8.2, §8.4): how many
// query rows one fp32 [q, k] MQA-logits chunk may hold, under the two
// mutually exclusive caps, the runtime's one-time memory budget or the
// scheduler's CPU-only estimator, and the CP-aware per-rank peak the
// scheduler admits batches against.

// Upstream's static no-chunk threshold and budget fractions (§8.2 rule 4,
// Appendix B): no chunking below 8M logits elements; chunk when the logits
// need more than half the free memory at init or 30% of total memory.
const (
	mqaNoChunkElements = 8_000_000
	mqaTotalFracNum    = 3
	mqaTotalFracDen    = 10
)

// parseMQAChunkEnv reads the two §8.1 environment values ("" = unset) into
// a config, rejecting non-numeric values with ErrConfig, and validates it.
// Python's int() and float() accept surrounding spaces; Go's parsers do
// not, and kvtwin rejects rather than trims.
func parseMQAChunkEnv(maxRows, maxGB string) (spec.MQAChunkConfig, error) {
	var cfg spec.MQAChunkConfig
	if maxRows != "" {
		v, err := strconv.ParseInt(maxRows, 10, 64)
		if err != nil {
			return spec.MQAChunkConfig{}, spec.Reject(spec.ErrConfig, "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS", maxRows, "a decimal integer > 0")
		}
		cfg.MaxRows = &v
	}
	if maxGB != "" {
		v, err := strconv.ParseFloat(maxGB, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return spec.MQAChunkConfig{}, spec.Reject(spec.ErrConfig, "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_GB", maxGB, "a finite number > 0")
		}
		cfg.MaxGB = &v // out of range parses to ±Inf or 0, which checkMQAChunkConfig rejects
	}
	return cfg, checkMQAChunkConfig(cfg)
}

// mqaPeakShapes is §8.4's logits shape of every rank of a batch with a
// valid layout and prefixes: Q_r = Σ_i (S_i,r + S_i,m(r)) and K_r the sum,
// over this rank's two pieces of every request, of the prefix plus the
// valid rows up to the piece's end. K sums saturate at MaxInt64, so the
// caller can reject an oversized batch instead of seeing it wrap. A non-CP
// batch (lay.CP == 0) has one shape: Q = Σ L_i, K = Σ (P_i + L_i).
func mqaPeakShapes(lay spec.Layout, b spec.MQAPeakBatch) []spec.MQALogitsShape {
	if lay.CP == 0 {
		var s spec.MQALogitsShape
		for i, l := range b.Layout.Lens {
			s.Q += int64(l)
			s.K = satAdd(s.K, satAdd(b.Prefix[i], int64(l)))
		}
		return []spec.MQALogitsShape{s}
	}
	shapes := make([]spec.MQALogitsShape, lay.CP)
	for r := range shapes {
		shapes[r].Q = int64(lay.R(r))
		for i := range lay.L {
			for _, k := range []int{r, lay.Mirror(r)} {
				end := min(lay.SegStart(i, k)+lay.S[i][k], lay.L[i])
				shapes[r].K = satAdd(shapes[r].K, satAdd(b.Prefix[i], int64(end)))
			}
		}
	}
	return shapes
}

// satAdd adds non-negative a and b, saturating at MaxInt64 so that a batch
// of huge prefixes is reported as too large rather than wrapping.
func satAdd(a, b int64) int64 {
	if spec.AddOverflows(a, b) {
		return math.MaxInt64
	}
	return a + b
}

// MQAGBCapBytes is the MaxGB cap in bytes, floor(gb · 2^30) (GB read as GiB
// [designed], Appendix D.6). The product by 2^30 is exact in float64, so
// flooring it and dividing in integers gives the exact floor of the real
// quotient; a cap at or past 2^63 bytes is MaxInt64 (no cap in practice).
func MQAGBCapBytes(gb float64) int64 {
	x := math.Floor(gb * (1 << 30))
	if x >= 1<<63 {
		return math.MaxInt64
	}
	return int64(x)
}

// chunkRows is §8.2: the query rows of one logits chunk for q query rows
// and k K rows under cfg, with the runtime rule when rt is set and the
// scheduler estimator otherwise. Preconditions: cfg valid, 0 <= q, k < 2^31.
func chunkRows(q, k int64, cfg spec.MQAChunkConfig, rt *spec.MQARuntimeBudget) int64 {
	switch {
	case q == 0:
		return 0
	case k == 0:
		return q
	case cfg.MaxRows != nil:
		return min(q, *cfg.MaxRows)
	case cfg.MaxGB != nil:
		return min(q, max(1, MQAGBCapBytes(*cfg.MaxGB)/(4*k)))
	case rt == nil:
		return q // the estimator stays conservative and never reads device memory
	case q*k < mqaNoChunkElements:
		return q
	case !mqaRuntimeNeedsChunk(q, k, *rt):
		return q
	default:
		// floor(0.5 · free / (4k)) == floor(free / (8k)) exactly.
		return min(q, max(1, rt.FreeAtInit/(8*k)))
	}
}

// mqaRuntimeNeedsChunk is rule 4's need test, 8·q·k > free or 4·q·k >
// 0.3·total, in exact integer arithmetic: 8qk > free iff qk > floor(free/8),
// and 0.3 is the rational 3/10 (upstream compares a Python float; the two
// differ only on exact ties). Preconditions: 0 <= q, k < 2^31.
func mqaRuntimeNeedsChunk(q, k int64, rt spec.MQARuntimeBudget) bool {
	qk := uint64(q) * uint64(k) // < 2^62
	if qk > uint64(rt.FreeAtInit/8) {
		return true
	}
	// 40·qk > 3·total, both sides as 128-bit products.
	lh, ll := bits.Mul64(qk, 4*mqaTotalFracDen)
	rh, rl := bits.Mul64(uint64(rt.TotalMem), mqaTotalFracNum)
	return lh > rh || (lh == rh && ll > rl)
}

// MQAPlanOf is the chunk plan of one shape.
func MQAPlanOf(s spec.MQALogitsShape, cfg spec.MQAChunkConfig, rt *spec.MQARuntimeBudget) spec.MQAChunkPlan {
	rows := chunkRows(s.Q, s.K, cfg, rt)
	p := spec.MQAChunkPlan{Q: s.Q, K: s.K, Rows: rows}
	if rows > 0 {
		p.Chunks = (s.Q + rows - 1) / rows
		p.PeakBytes = 4 * uint64(rows) * uint64(s.K) // < 2^64 for dims < 2^31
	}
	return p
}

// MQAChunkRows is mqa.chunk_rows (docs/spec/cp-layout.md §8.2, §8.4): the chunk plan
// of every given shape, and for a batch the plan of every CP rank's fused
// logits matrix with the admission peak, the worst rank's.
func MQAChunkRows(lim spec.Limits, in spec.MQAChunkRowsInput) (spec.MQAChunkRowsOutput, error) {
	lay, err := ValidateMQAChunkRows(lim, in)
	if err != nil {
		return spec.MQAChunkRowsOutput{}, err
	}
	out := spec.MQAChunkRowsOutput{Shapes: []spec.MQAChunkPlan{}, Ranks: []spec.MQAChunkPlan{}}
	for _, s := range in.Shapes {
		out.Shapes = append(out.Shapes, MQAPlanOf(s, in.Config, in.Runtime))
	}
	if in.Batch == nil {
		return out, nil
	}
	for _, s := range mqaPeakShapes(lay, *in.Batch) {
		p := MQAPlanOf(s, in.Config, in.Runtime)
		out.Ranks = append(out.Ranks, p)
		out.AdmissionPeak = max(out.AdmissionPeak, p.PeakBytes)
	}
	return out, nil
}

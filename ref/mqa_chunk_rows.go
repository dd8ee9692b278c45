package ref

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
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

// MQAChunkConfig holds the two chunk-cap knobs (§8.1); at most one is set.
type MQAChunkConfig struct {
	// MaxRows is SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS, a hard row cap (> 0), or nil.
	MaxRows *int64 `json:"max_rows,omitempty"`
	// MaxGB is SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_GB, a cap in GiB on one fp32
	// chunk (finite, > 0), or nil.
	MaxGB *float64 `json:"max_gb,omitempty"`
}

// MQARuntimeBudget is the runtime's memory view (§8.2 rule 4), injected:
// the free memory sampled once at init and the device's total memory, bytes.
type MQARuntimeBudget struct {
	// FreeAtInit is the free device memory sampled once at init, >= 0.
	FreeAtInit int64 `json:"free_at_init"`
	// TotalMem is the device's total memory, >= 0.
	TotalMem int64 `json:"total_mem"`
}

// MQALogitsShape is one logits matrix: q query rows by k K rows.
type MQALogitsShape struct {
	// Q is the number of query rows, in [0, 2^31).
	Q int64 `json:"q"`
	// K is the number of K rows, in [0, 2^31).
	K int64 `json:"k"`
}

// MQAPeakBatch is a batch for the §8.4 peak: its layout and the prefix
// length P_i of every request. Layout.CP == 0 is a non-CP batch (Lens give
// L_i; Granule must be 0).
type MQAPeakBatch struct {
	// Layout names the CP layout, or a non-CP batch when CP is 0.
	Layout LayoutSpec `json:"layout"`
	// Prefix are the prefix lengths P_i, one per request, >= 0.
	Prefix []int64 `json:"prefix"`
}

// MQAChunkRowsInput is the input of mqa.chunk_rows.
type MQAChunkRowsInput struct {
	// Config holds the chunk caps.
	Config MQAChunkConfig `json:"config"`
	// Runtime, when set, selects the runtime rule with this budget; nil is
	// the scheduler estimator (§8.2 rule 5), which never reads device memory.
	Runtime *MQARuntimeBudget `json:"runtime,omitempty"`
	// Shapes are logits shapes to plan directly.
	Shapes []MQALogitsShape `json:"shapes,omitempty"`
	// Batch, when set, is planned per CP rank (§8.4).
	Batch *MQAPeakBatch `json:"batch,omitempty"`
}

// MQAChunkPlan is how one logits matrix is chunked.
type MQAChunkPlan struct {
	// Q and K are the matrix's query and K rows.
	Q int64 `json:"q"`
	// K is the matrix's K rows.
	K int64 `json:"k"`
	// Rows is chunkRows(Q, K): the query rows of one chunk (0 when Q is 0).
	Rows int64 `json:"rows"`
	// Chunks is ceil(Q / Rows), 0 when Q is 0.
	Chunks int64 `json:"chunks"`
	// PeakBytes is 4·Rows·K, the fp32 chunk's size.
	PeakBytes uint64 `json:"peak_bytes"`
}

// MQAChunkRowsOutput is the output of mqa.chunk_rows.
type MQAChunkRowsOutput struct {
	// Shapes plans each input shape, in order; never nil.
	Shapes []MQAChunkPlan `json:"shapes"`
	// Ranks plans the batch per CP rank (one entry, the whole batch, for a
	// non-CP batch; empty without a batch); never nil.
	Ranks []MQAChunkPlan `json:"ranks"`
	// AdmissionPeak is max over Ranks of PeakBytes (0 without a batch).
	AdmissionPeak uint64 `json:"admission_peak"`
}

// parseMQAChunkEnv reads the two §8.1 environment values ("" = unset) into
// a config, rejecting non-numeric values with ErrConfig, and validates it.
// Python's int() and float() accept surrounding spaces; Go's parsers do
// not, and kvtwin rejects rather than trims.
func parseMQAChunkEnv(maxRows, maxGB string) (MQAChunkConfig, error) {
	var cfg MQAChunkConfig
	if maxRows != "" {
		v, err := strconv.ParseInt(maxRows, 10, 64)
		if err != nil {
			return MQAChunkConfig{}, Reject(ErrConfig, "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_ROWS", maxRows, "a decimal integer > 0")
		}
		cfg.MaxRows = &v
	}
	if maxGB != "" {
		v, err := strconv.ParseFloat(maxGB, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return MQAChunkConfig{}, Reject(ErrConfig, "SGLANG_NSA_MQA_LOGITS_CHUNK_MAX_GB", maxGB, "a finite number > 0")
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
func mqaPeakShapes(lay Layout, b MQAPeakBatch) []MQALogitsShape {
	if lay.CP == 0 {
		var s MQALogitsShape
		for i, l := range b.Layout.Lens {
			s.Q += int64(l)
			s.K = satAdd(s.K, satAdd(b.Prefix[i], int64(l)))
		}
		return []MQALogitsShape{s}
	}
	shapes := make([]MQALogitsShape, lay.CP)
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
	if AddOverflows(a, b) {
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
func chunkRows(q, k int64, cfg MQAChunkConfig, rt *MQARuntimeBudget) int64 {
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
func mqaRuntimeNeedsChunk(q, k int64, rt MQARuntimeBudget) bool {
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
func MQAPlanOf(s MQALogitsShape, cfg MQAChunkConfig, rt *MQARuntimeBudget) MQAChunkPlan {
	rows := chunkRows(s.Q, s.K, cfg, rt)
	p := MQAChunkPlan{Q: s.Q, K: s.K, Rows: rows}
	if rows > 0 {
		p.Chunks = (s.Q + rows - 1) / rows
		p.PeakBytes = 4 * uint64(rows) * uint64(s.K) // < 2^64 for dims < 2^31
	}
	return p
}

// MQAChunkRows is mqa.chunk_rows (docs/spec/cp-layout.md §8.2, §8.4): the chunk plan
// of every given shape, and for a batch the plan of every CP rank's fused
// logits matrix with the admission peak, the worst rank's.
func MQAChunkRows(lim Limits, in MQAChunkRowsInput) (MQAChunkRowsOutput, error) {
	lay, err := ValidateMQAChunkRows(lim, in)
	if err != nil {
		return MQAChunkRowsOutput{}, err
	}
	out := MQAChunkRowsOutput{Shapes: []MQAChunkPlan{}, Ranks: []MQAChunkPlan{}}
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

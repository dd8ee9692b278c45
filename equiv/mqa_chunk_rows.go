package equiv

import (
	"fmt"
	"math"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// MQAChunkRows is the differential spec of mqa.chunk_rows (docs/spec/cp-layout.md §8.1, §8.2, §8.4).
func MQAChunkRows() *Spec[spec.MQAChunkRowsInput, spec.MQAChunkRowsOutput] {
	return &Spec[spec.MQAChunkRowsInput, spec.MQAChunkRowsOutput]{
		Op:          catalog.MQAChunkRows(),
		Valid:       rapid.Custom(mqaChunkValid),
		Invalid:     rapid.Custom(mqaChunkInvalid),
		Boundary:    mqaChunkBoundary(),
		Regressions: mqaChunkRegressions(),
		Props: []Prop[spec.MQAChunkRowsInput, spec.MQAChunkRowsOutput]{
			{"chunks-cover-q", mqaChunksCover},
			{"chunk-bytes-capped", mqaChunkCapped},
			{"estimator-conservative", mqaEstimatorConservative},
			{"cp-rank-shapes", mqaRankShapes},
		},
	}
}

// mqaPS is the NSA page size the boundary lengths straddle (§0.1).
const mqaPS = 64

func mqaChunkValid(t *rapid.T) spec.MQAChunkRowsInput {
	in := spec.MQAChunkRowsInput{Config: mqaConfig(t)}
	if rapid.Bool().Draw(t, "runtime") {
		in.Runtime = &spec.MQARuntimeBudget{
			FreeAtInit: rapid.OneOf(rapid.Int64Range(0, 1<<20), rapid.Int64Range(0, 1<<40)).Draw(t, "free_at_init"),
			TotalMem:   rapid.OneOf(rapid.Int64Range(0, 1<<20), rapid.Int64Range(0, 1<<42)).Draw(t, "total_mem"),
		}
	}
	n := rapid.IntRange(0, 4).Draw(t, "n_shapes")
	for range n {
		in.Shapes = append(in.Shapes, spec.MQALogitsShape{Q: mqaDim(t, "q"), K: mqaDim(t, "k")})
	}
	if rapid.IntRange(0, 3).Draw(t, "has_batch") > 0 {
		b := mqaBatch(t)
		in.Batch = &b
	}
	return in
}

// mqaConfig draws no cap, a row cap, or a GiB cap given as a whole number
// of bytes (small enough to bind on small batches) or a huge one.
func mqaConfig(t *rapid.T) spec.MQAChunkConfig {
	switch rapid.IntRange(0, 2).Draw(t, "cap") {
	case 1:
		rows := rapid.OneOf(rapid.Int64Range(1, 64), rapid.Int64Range(1, 1<<40)).Draw(t, "max_rows")
		return spec.MQAChunkConfig{MaxRows: &rows}
	case 2:
		gb := rapid.OneOf(
			rapid.Map(rapid.Int64Range(1, 1<<20), func(b int64) float64 { return float64(b) / (1 << 30) }),
			rapid.Float64Range(1e-12, 1e300),
			rapid.SampledFrom([]float64{0.25, 1, 2, 4.5, math.MaxFloat64, math.SmallestNonzeroFloat64}),
		).Draw(t, "max_gb")
		return spec.MQAChunkConfig{MaxGB: &gb}
	}
	return spec.MQAChunkConfig{}
}

// mqaDim draws a row count: zero, small, around the 8M-element threshold's
// square root, or anywhere up to the CUDA bound.
func mqaDim(t *rapid.T, label string) int64 {
	return rapid.OneOf(
		rapid.Just(int64(0)),
		rapid.Int64Range(1, 64),
		rapid.Int64Range(2000, 4000),
		rapid.Int64Range(0, math.MaxInt32),
	).Draw(t, label)
}

// mqaBatch draws a CP batch (cp 2..5, padded or not) or, one time in five,
// a non-CP one; lengths mix the boundary lengths with arbitrary ones.
func mqaBatch(t *rapid.T) spec.MQAPeakBatch {
	cp := rapid.IntRange(2, 5).Draw(t, "cp")
	g := rapid.SampledFrom([]int{0, 0, 1, 2, 4, mqaPS}).Draw(t, "granule")
	if rapid.IntRange(0, 4).Draw(t, "non_cp") == 0 {
		cp, g = 0, 0
	}
	bs := rapid.IntRange(1, 4).Draw(t, "bs")
	b := spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: cp, Granule: g}}
	for range bs {
		l := rapid.OneOf(
			rapid.SampledFrom([]int{1, mqaPS - 1, mqaPS, mqaPS + 1, 2*cp - 1, 2 * cp, 2*cp + 1}),
			rapid.IntRange(1, 300),
		).Draw(t, "len")
		if cp > 0 && g == 0 {
			l = max(l, 2*cp) // the unpadded split needs 2·cp tokens
		}
		l = max(l, 1) // 2·cp−1 of a non-CP batch (cp 0)
		b.Layout.Lens = append(b.Layout.Lens, l)
		b.Prefix = append(b.Prefix, rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, 300), rapid.Int64Range(0, 1<<20)).Draw(t, "prefix"))
	}
	return b
}

func mqaChunkInvalid(t *rapid.T) Bad[spec.MQAChunkRowsInput] {
	in := mqaChunkValid(t)
	type bad = Bad[spec.MQAChunkRowsInput]
	ensureBatch := func() *spec.MQAPeakBatch {
		if in.Batch == nil {
			b := mqaBatch(t)
			in.Batch = &b
		}
		return in.Batch
	}
	ensureShape := func() *spec.MQALogitsShape {
		in.Shapes = append(in.Shapes, spec.MQALogitsShape{Q: 8, K: 8})
		i := rapid.IntRange(0, len(in.Shapes)-1).Draw(t, "bad_shape")
		return &in.Shapes[i]
	}
	switch rapid.IntRange(0, 13).Draw(t, "violation") {
	case 0:
		rows, gb := rapid.Int64Range(1, 64).Draw(t, "rows"), rapid.Float64Range(0.5, 8).Draw(t, "gb")
		in.Config = spec.MQAChunkConfig{MaxRows: &rows, MaxGB: &gb}
		return bad{in, spec.ErrConfig}
	case 1:
		rows := rapid.Int64Range(math.MinInt64, 0).Draw(t, "bad_max_rows")
		in.Config = spec.MQAChunkConfig{MaxRows: &rows}
		return bad{in, spec.ErrConfig}
	case 2:
		gb := rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(-1e300, -1e-300)).Draw(t, "bad_max_gb")
		in.Config = spec.MQAChunkConfig{MaxGB: &gb}
		return bad{in, spec.ErrConfig}
	case 3:
		in.Runtime = &spec.MQARuntimeBudget{FreeAtInit: rapid.Int64Range(math.MinInt64, -1).Draw(t, "bad_free"), TotalMem: 1 << 30}
		return bad{in, spec.ErrNegative}
	case 4:
		in.Runtime = &spec.MQARuntimeBudget{FreeAtInit: 1 << 30, TotalMem: rapid.Int64Range(math.MinInt64, -1).Draw(t, "bad_total")}
		return bad{in, spec.ErrNegative}
	case 5:
		s := ensureShape()
		if rapid.Bool().Draw(t, "bad_q") {
			s.Q = rapid.Int64Range(math.MinInt64, -1).Draw(t, "neg_q")
		} else {
			s.K = rapid.Int64Range(math.MinInt64, -1).Draw(t, "neg_k")
		}
		return bad{in, spec.ErrNegative}
	case 6:
		s := ensureShape()
		if rapid.Bool().Draw(t, "big_q") {
			s.Q = rapid.Int64Range(math.MaxInt32+1, math.MaxInt64).Draw(t, "huge_q")
		} else {
			s.K = rapid.Int64Range(math.MaxInt32+1, math.MaxInt64).Draw(t, "huge_k")
		}
		return bad{in, spec.ErrTooLarge}
	case 7:
		b := ensureBatch()
		b.Layout.CP = rapid.OneOf(rapid.IntRange(math.MinInt32, -1), rapid.Just(1), rapid.IntRange(spec.MaxCP+1, math.MaxInt32)).Draw(t, "bad_cp")
		return bad{in, spec.ErrInvalidCPSize}
	case 8:
		b := ensureBatch()
		b.Layout.Lens, b.Prefix = []int{}, []int64{}
		return bad{in, spec.ErrEmptyBatch}
	case 9:
		b := ensureBatch()
		b.Layout.Lens[rapid.IntRange(0, len(b.Layout.Lens)-1).Draw(t, "bad_len_at")] = rapid.IntRange(math.MinInt32, 0).Draw(t, "bad_len")
		return bad{in, spec.ErrBadLength}
	case 10:
		b := ensureBatch()
		if b.Layout.CP == 0 {
			b.Layout.Granule = rapid.IntRange(1, 64).Draw(t, "non_cp_granule")
		} else {
			b.Layout.Granule = rapid.IntRange(math.MinInt32, -1).Draw(t, "bad_granule")
		}
		return bad{in, spec.ErrInvalidGranule}
	case 11:
		b := ensureBatch()
		b.Prefix = append(b.Prefix, 0)
		if rapid.Bool().Draw(t, "short_prefix") {
			b.Prefix = b.Prefix[:len(b.Prefix)-2]
		}
		return bad{in, spec.ErrLengthMismatch}
	case 12:
		b := ensureBatch()
		b.Prefix[rapid.IntRange(0, len(b.Prefix)-1).Draw(t, "neg_prefix_at")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "neg_prefix")
		return bad{in, spec.ErrNegative}
	default:
		b := ensureBatch()
		b.Prefix[rapid.IntRange(0, len(b.Prefix)-1).Draw(t, "huge_prefix_at")] = rapid.Int64Range(math.MaxInt32, math.MaxInt64).Draw(t, "huge_prefix")
		return bad{in, spec.ErrTooLarge}
	}
}

// mqaPeak is a batch input for the boundary tables.
func mqaPeak(cp, g int, lens []int, prefix int64, cfg spec.MQAChunkConfig) spec.MQAChunkRowsInput {
	p := make([]int64, len(lens))
	for i := range p {
		p[i] = prefix
	}
	return spec.MQAChunkRowsInput{Config: cfg, Batch: &spec.MQAPeakBatch{Layout: spec.LayoutSpec{CP: cp, Lens: lens, Granule: g}, Prefix: p}}
}

// mqaChunkBoundary: the boundary lengths (1, ps−1, ps, ps+1, 2·cp−1, 2·cp,
// 2·cp+1) alone and mixed in one batch, padded (g = 1, g = ps) and unpadded
// where the split allows, under each cap; plus §8.2's and §8.4's worked
// examples and rule 4's threshold and budget edges.
func mqaChunkBoundary() []Case[spec.MQAChunkRowsInput] {
	var cs []Case[spec.MQAChunkRowsInput]
	two, gb := int64(2), 1e-6
	cfgs := []struct {
		name string
		cfg  spec.MQAChunkConfig
	}{{"nocap", spec.MQAChunkConfig{}}, {"rows2", spec.MQAChunkConfig{MaxRows: &two}}, {"gb1e-6", spec.MQAChunkConfig{MaxGB: &gb}}}
	for _, cp := range []int{2, 4, 8} {
		lens := []int{1, mqaPS - 1, mqaPS, mqaPS + 1, 2*cp - 1, 2 * cp, 2*cp + 1}
		for _, g := range []int{0, 1, mqaPS} {
			for _, l := range lens {
				if g == 0 && l < 2*cp {
					continue
				}
				cs = append(cs, Case[spec.MQAChunkRowsInput]{fmt.Sprintf("cp%d-g%d-len%d", cp, g, l), mqaPeak(cp, g, []int{l}, 0, cfgs[0].cfg)})
			}
			mixed := lens
			if g == 0 {
				mixed = []int{mqaPS - 1, mqaPS, mqaPS + 1, 2 * cp, 2*cp + 1}
			}
			for _, c := range cfgs {
				cs = append(cs, Case[spec.MQAChunkRowsInput]{fmt.Sprintf("cp%d-g%d-mixed-p100-%s", cp, g, c.name), mqaPeak(cp, g, mixed, 100, c.cfg)})
			}
		}
	}
	cs = append(cs,
		Case[spec.MQAChunkRowsInput]{"non-cp-mixed", mqaPeak(0, 0, []int{1, mqaPS - 1, mqaPS, mqaPS + 1, 3, 4, 5}, 7, spec.MQAChunkConfig{})},
		Case[spec.MQAChunkRowsInput]{"8.4-cp2-L8-P0", mqaPeak(2, 0, []int{8}, 0, spec.MQAChunkConfig{})},
		Case[spec.MQAChunkRowsInput]{"8.4-cp2-L8-P64", mqaPeak(2, 0, []int{8}, 64, spec.MQAChunkConfig{})},
		Case[spec.MQAChunkRowsInput]{"8.4-cp2-L8-P64-rows2", mqaPeak(2, 0, []int{8}, 64, spec.MQAChunkConfig{MaxRows: &two})},
	)
	one := 1.0
	cs = append(cs, Case[spec.MQAChunkRowsInput]{"8.2-gb1-k131072-and-k100000", spec.MQAChunkRowsInput{
		Config: spec.MQAChunkConfig{MaxGB: &one},
		Shapes: []spec.MQALogitsShape{{Q: 1 << 20, K: 131072}, {Q: 1 << 20, K: 100000}, {Q: 0, K: 5}, {Q: 5, K: 0}, {Q: 7, K: 1 << 30}},
	}})
	rt := func(free, total int64) *spec.MQARuntimeBudget {
		return &spec.MQARuntimeBudget{FreeAtInit: free, TotalMem: total}
	}
	cs = append(cs,
		// 2000·3999 = 7,998,000 < 8M stays whole; 2000·4000 = 8M is tested against the budget.
		Case[spec.MQAChunkRowsInput]{"runtime-threshold", spec.MQAChunkRowsInput{Runtime: rt(0, 0),
			Shapes: []spec.MQALogitsShape{{Q: 2000, K: 3999}, {Q: 2000, K: 4000}, {Q: 1, K: 8_000_000}}}},
		// 8·q·k = 64M: free 64M does not need a chunk, 64M−1 does; 40qk = 320M vs 3·total.
		Case[spec.MQAChunkRowsInput]{"runtime-free-edge", spec.MQAChunkRowsInput{Runtime: rt(64_000_000, 1<<40),
			Shapes: []spec.MQALogitsShape{{Q: 2000, K: 4000}}}},
		Case[spec.MQAChunkRowsInput]{"runtime-free-edge-minus-one", spec.MQAChunkRowsInput{Runtime: rt(64_000_000-1, 1<<40),
			Shapes: []spec.MQALogitsShape{{Q: 2000, K: 4000}}}},
		Case[spec.MQAChunkRowsInput]{"runtime-total-edge", spec.MQAChunkRowsInput{Runtime: rt(1<<40, 320_000_000/3+1),
			Shapes: []spec.MQALogitsShape{{Q: 2000, K: 4000}}}},
		Case[spec.MQAChunkRowsInput]{"runtime-total-just-over", spec.MQAChunkRowsInput{Runtime: rt(1<<40, 320_000_000/3),
			Shapes: []spec.MQALogitsShape{{Q: 2000, K: 4000}}}},
		Case[spec.MQAChunkRowsInput]{"runtime-max-dims", spec.MQAChunkRowsInput{Runtime: rt(math.MaxInt64, math.MaxInt64),
			Shapes: []spec.MQALogitsShape{{Q: math.MaxInt32, K: math.MaxInt32}}}},
		Case[spec.MQAChunkRowsInput]{"runtime-tiny-free", spec.MQAChunkRowsInput{Runtime: rt(7, 1<<40),
			Shapes: []spec.MQALogitsShape{{Q: 4000, K: 4000}}}},
	)
	return cs
}

// mqaChunkRegressions: §8.6's minimal inputs (Appendix A11).
func mqaChunkRegressions() []Case[spec.MQAChunkRowsInput] {
	two := int64(2)
	return []Case[spec.MQAChunkRowsInput]{
		// Fixed worst rank 160 B; full-request accounting 4·8·8 = 256 B.
		{"full-request-accounting", mqaPeak(2, 0, []int{8}, 0, spec.MQAChunkConfig{})},
		// Fixed 4·2·138 = 1104 B per rank; ignoring the row cap 2208 B.
		{"estimator-ignores-chunk-cap", mqaPeak(2, 0, []int{8}, 64, spec.MQAChunkConfig{MaxRows: &two})},
	}
}

// mqaPlans is every plan of an output, shapes then ranks.
func mqaPlans(out spec.MQAChunkRowsOutput) []spec.MQAChunkPlan {
	return append(append([]spec.MQAChunkPlan{}, out.Shapes...), out.Ranks...)
}

// mqaChunksCover is P8.2's first half: the chunks' rows sum to Q (ceil
// division, every chunk but the last full), and the peak is one chunk.
func mqaChunksCover(_ spec.Limits, _ spec.MQAChunkRowsInput, out spec.MQAChunkRowsOutput) error {
	for i, p := range mqaPlans(out) {
		if p.Q == 0 {
			if p.Rows != 0 || p.Chunks != 0 || p.PeakBytes != 0 {
				return fmt.Errorf("plan %d: Q=0 but rows=%d chunks=%d peak=%d", i, p.Rows, p.Chunks, p.PeakBytes)
			}
			continue
		}
		if p.Rows < 1 || p.Rows > p.Q {
			return fmt.Errorf("plan %d: rows %d outside [1, Q=%d]", i, p.Rows, p.Q)
		}
		if p.Chunks*p.Rows < p.Q || (p.Chunks-1)*p.Rows >= p.Q {
			return fmt.Errorf("plan %d: %d chunks of %d rows do not cover Q=%d exactly", i, p.Chunks, p.Rows, p.Q)
		}
		if p.PeakBytes != 4*uint64(p.Rows)*uint64(p.K) {
			return fmt.Errorf("plan %d: peak %d != 4·rows·K = %d", i, p.PeakBytes, 4*uint64(p.Rows)*uint64(p.K))
		}
	}
	return nil
}

// mqaChunkCapped is P8.2's second half: a chunk's bytes stay within the
// GiB cap unless one row alone exceeds it (max(cap, 4K)); the row cap is
// honoured (§8.6 bug 3); the runtime's chunks fit half the free memory
// unless one row alone exceeds it.
func mqaChunkCapped(_ spec.Limits, in spec.MQAChunkRowsInput, out spec.MQAChunkRowsOutput) error {
	for i, p := range mqaPlans(out) {
		if p.Q == 0 || p.K == 0 {
			continue
		}
		switch c := in.Config; {
		case c.MaxRows != nil:
			if p.Rows != min(p.Q, *c.MaxRows) {
				return fmt.Errorf("plan %d: rows %d != min(Q=%d, max_rows=%d)", i, p.Rows, p.Q, *c.MaxRows)
			}
		case c.MaxGB != nil:
			capB := uint64(ref.MQAGBCapBytes(*c.MaxGB))
			if p.PeakBytes > max(capB, 4*uint64(p.K)) {
				return fmt.Errorf("plan %d: chunk of %d B over max(cap %d B, one row %d B)", i, p.PeakBytes, capB, 4*p.K)
			}
			if p.Rows < p.Q && p.PeakBytes+4*uint64(p.K) <= capB {
				return fmt.Errorf("plan %d: %d rows leave room for another under the cap %d B", i, p.Rows, capB)
			}
		case in.Runtime != nil && p.Rows < p.Q:
			if half := uint64(in.Runtime.FreeAtInit) / 2; p.PeakBytes > max(half, 4*uint64(p.K)) {
				return fmt.Errorf("plan %d: chunk of %d B over half the free memory (%d B)", i, p.PeakBytes, half)
			}
		}
	}
	return nil
}

// mqaEstimatorConservative is §8.2 rule 5: without a cap the estimator
// never chunks, and it never plans fewer rows than the runtime would.
func mqaEstimatorConservative(lim spec.Limits, in spec.MQAChunkRowsInput, out spec.MQAChunkRowsOutput) error {
	est := out
	if in.Runtime != nil {
		x := in
		x.Runtime = nil
		var err error
		if est, err = ref.MQAChunkRows(lim, x); err != nil {
			return fmt.Errorf("ref estimator: %v", err)
		}
	}
	run := mqaPlans(out)
	for i, e := range mqaPlans(est) {
		if in.Config.MaxRows == nil && in.Config.MaxGB == nil && e.Rows != e.Q {
			return fmt.Errorf("plan %d: the estimator chunked (%d of Q=%d rows) without a cap", i, e.Rows, e.Q)
		}
		if e.Rows < run[i].Rows {
			return fmt.Errorf("plan %d: estimator rows %d < runtime rows %d", i, e.Rows, run[i].Rows)
		}
	}
	return nil
}

// mqaRankShapes is §8.4, recomputed token by token: every compute position
// of a request is walked, its segment found, and the rank owning that
// segment credited with a query row; each (request, segment) piece adds
// P_i plus the valid tokens before the piece's end to its owner's K. The
// admission peak is the worst rank's.
func mqaRankShapes(_ spec.Limits, in spec.MQAChunkRowsInput, out spec.MQAChunkRowsOutput) error {
	if in.Batch == nil {
		if len(out.Ranks) != 0 || out.AdmissionPeak != 0 {
			return fmt.Errorf("no batch but %d rank plans, peak %d", len(out.Ranks), out.AdmissionPeak)
		}
		return nil
	}
	b := in.Batch
	want := []spec.MQALogitsShape{{}}
	if b.Layout.CP == 0 {
		for i, l := range b.Layout.Lens {
			want[0].Q += int64(l)
			want[0].K += b.Prefix[i] + int64(l)
		}
	} else {
		lay, err := b.Layout.Build()
		if err != nil {
			return err
		}
		want = make([]spec.MQALogitsShape, lay.CP)
		for i, l := range lay.L {
			pos := 0
			for k, s := range lay.S[i] {
				owner := lay.Owner(k)
				pos += s
				want[owner].Q += int64(s)
				valid := 0
				for tok := 0; tok < pos; tok++ {
					if tok < l {
						valid++
					}
				}
				want[owner].K += b.Prefix[i] + int64(valid)
			}
		}
	}
	if len(want) != len(out.Ranks) {
		return fmt.Errorf("%d rank plans, want %d", len(out.Ranks), len(want))
	}
	var peak uint64
	for r, w := range want {
		if p := out.Ranks[r]; p.Q != w.Q || p.K != w.K {
			return fmt.Errorf("rank %d: (Q, K) = (%d, %d), want (%d, %d)", r, p.Q, p.K, w.Q, w.K)
		}
		if p := ref.MQAPlanOf(w, in.Config, in.Runtime); p != out.Ranks[r] {
			return fmt.Errorf("rank %d: plan %+v, want ChunkRows of its shape %+v", r, out.Ranks[r], p)
		}
		peak = max(peak, out.Ranks[r].PeakBytes)
	}
	if out.AdmissionPeak != peak {
		return fmt.Errorf("admission peak %d != worst rank %d", out.AdmissionPeak, peak)
	}
	return nil
}

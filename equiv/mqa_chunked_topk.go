package equiv

import (
	"fmt"
	"math"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// MQAChunkedTopK is the differential spec of mqa.chunked_topk (docs/spec/cp-layout.md §8.3).
func MQAChunkedTopK() *Spec[spec.MQAChunkedTopKInput, spec.MQAChunkedTopKOutput] {
	return &Spec[spec.MQAChunkedTopKInput, spec.MQAChunkedTopKOutput]{
		Op:          catalog.MQAChunkedTopK(),
		Valid:       rapid.Custom(func(t *rapid.T) spec.MQAChunkedTopKInput { return TopKValid(t, false) }),
		Invalid:     rapid.Custom(topkInvalid),
		Boundary:    topkBoundary(),
		Regressions: topkRegressions(),
		Rejects:     topkRejects(),
		Props: []Prop[spec.MQAChunkedTopKInput, spec.MQAChunkedTopKOutput]{
			{"row-shape", topkRowShape},
			{"selects-the-best", topkSelectsBest},
			{"chunked-equals-unchunked", topkChunkedEqualsUnchunked},
		},
	}
}

// TopKValid draws a valid top-k input: up to 12 rows of up to 40 scores,
// windows anywhere inside the row (sometimes empty, sometimes narrower than
// topk), offsets for RAGGED rows of different requests or none, and chunk
// rows from 1 to past Q. Scores come from a few values so ties are common;
// with nonFinite set they also include NaN (both signs), ±Inf and −0, which
// JSON cannot carry (typed tests only).
func TopKValid(t *rapid.T, nonFinite bool) spec.MQAChunkedTopKInput {
	q := rapid.IntRange(0, 12).Draw(t, "q")
	kt := rapid.IntRange(0, 40).Draw(t, "kt")
	if q == 0 {
		kt = 0
	}
	vals := []float32{-2, -1, -0.5, 0, float32(math.Copysign(0, -1)), 0.25, 1, 3, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}
	if nonFinite {
		vals = append(vals, float32(math.NaN()), math.Float32frombits(0xFFC00001), float32(math.Inf(1)), float32(math.Inf(-1)))
	}
	score := rapid.OneOf(rapid.SampledFrom(vals), rapid.Float32Range(-4, 4))
	in := spec.MQAChunkedTopKInput{
		Logits:    make([][]float32, q),
		KS:        make([]int64, q),
		KE:        make([]int64, q),
		TopK:      rapid.Int64Range(1, 12).Draw(t, "topk"),
		ChunkRows: rapid.Int64Range(1, int64(q)+2).Draw(t, "chunk_rows"),
	}
	for r := range q {
		row := make([]float32, kt)
		for j := range row {
			row[j] = score.Draw(t, "score")
		}
		in.Logits[r] = row
		in.KS[r] = rapid.Int64Range(0, int64(kt)).Draw(t, "ks")
		in.KE[r] = rapid.Int64Range(in.KS[r], int64(kt)).Draw(t, "ke")
	}
	if q > 0 && rapid.Bool().Draw(t, "has_offset") {
		in.Offset = make([]int32, q+rapid.IntRange(0, 2).Draw(t, "extra_offsets"))
		for r := range in.Offset {
			in.Offset[r] = rapid.OneOf(rapid.Int32Range(0, 100), rapid.Int32Range(0, math.MaxInt32-64)).Draw(t, "offset")
		}
	}
	return in
}

func topkInvalid(t *rapid.T) Bad[spec.MQAChunkedTopKInput] {
	in := TopKValid(t, false)
	type bad = Bad[spec.MQAChunkedTopKInput]
	if len(in.Logits) == 0 {
		in = spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2, 3}}, KS: []int64{0}, KE: []int64{3}, TopK: in.TopK, ChunkRows: in.ChunkRows}
	}
	q, kt := len(in.Logits), int64(len(in.Logits[0]))
	r := rapid.IntRange(0, q-1).Draw(t, "bad_row")
	switch rapid.IntRange(0, 10).Draw(t, "violation") {
	case 0:
		in.ChunkRows = rapid.Int64Range(math.MinInt64, 0).Draw(t, "bad_chunk_rows")
		return bad{in, spec.ErrShape}
	case 1:
		in.TopK = rapid.Int64Range(math.MinInt64, 0).Draw(t, "bad_topk")
		return bad{in, spec.ErrShape}
	case 2:
		in.Logits = append(in.Logits, make([]float32, kt+1))
		in.KS, in.KE = append(in.KS, 0), append(in.KE, 0)
		if len(in.Offset) > 0 {
			in.Offset = append(in.Offset, 0)
		}
		return bad{in, spec.ErrShape}
	case 3:
		if rapid.Bool().Draw(t, "ks_list") {
			in.KS = append(in.KS, 0)
		} else {
			in.KE = in.KE[:q-1]
		}
		return bad{in, spec.ErrShape}
	case 4:
		if q < 2 {
			in.Logits, in.KS, in.KE = append(in.Logits, in.Logits[0]), append(in.KS, 0), append(in.KE, 0)
		}
		in.Offset = make([]int32, rapid.IntRange(1, len(in.Logits)-1).Draw(t, "short_offset"))
		return bad{in, spec.ErrShape}
	case 5:
		in.KS[r] = in.KE[r] + rapid.Int64Range(1, 5).Draw(t, "ks_past_ke")
		in.KE[r] = min(in.KE[r], kt)
		return bad{in, spec.ErrShape}
	case 6:
		in.KE[r] = kt + rapid.Int64Range(1, 1<<40).Draw(t, "ke_past_kt")
		return bad{in, spec.ErrShape}
	case 7:
		in.KS[r] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "neg_ks")
		return bad{in, spec.ErrNegative}
	case 8:
		in.Offset = make([]int32, q)
		in.Offset[r] = rapid.Int32Range(math.MinInt32, -1).Draw(t, "neg_offset")
		return bad{in, spec.ErrNegative}
	case 9:
		in.Offset = make([]int32, q)
		in.KS[r], in.KE[r] = 0, max(kt, 2)
		if in.KE[r] > kt {
			for i := range in.Logits {
				in.Logits[i] = append(in.Logits[i], make([]float32, in.KE[r]-kt)...)
			}
		}
		// offset + (ke-ks-1) lands in [MaxInt32+1, MaxInt32+ke-1].
		in.Offset[r] = math.MaxInt32 - int32(in.KE[r]) + 2 + rapid.Int32Range(0, int32(in.KE[r])-2).Draw(t, "offset_over")
		return bad{in, spec.ErrOverflow}
	default:
		// Past the 1 GiB output bound, but not so far that the byte count overflows.
		in.TopK = rapid.Int64Range(spec.DefaultMaxOutputBytes/(4*int64(q))+1, (1<<62)/(4*int64(q))).Draw(t, "huge_topk")
		return bad{in, spec.ErrTooLarge}
	}
}

// topkBoundary: windows of topk−1, topk and topk+1 candidates (the fast
// path's edge), empty windows, all-equal scores (ties broken by j), chunk
// rows 1, Q−1, Q and Q+1, and §8.3's order on signed zeros and extremes.
func topkBoundary() []Case[spec.MQAChunkedTopKInput] {
	var cs []Case[spec.MQAChunkedTopKInput]
	const topk = 4
	row := []float32{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}
	for _, n := range []int64{0, 1, topk - 1, topk, topk + 1, 10} {
		for _, c := range []int64{1, 2, 3, 4} {
			in := spec.MQAChunkedTopKInput{Logits: [][]float32{row, row, row}, KS: []int64{0, 10 - n, (10 - n) / 2}, KE: []int64{n, 10, (10-n)/2 + n}, TopK: topk, Offset: []int32{0, 100, 1000}, ChunkRows: c}
			cs = append(cs, Case[spec.MQAChunkedTopKInput]{fmt.Sprintf("window%d-chunk%d", n, c), in})
		}
	}
	ties := []float32{2, 2, 2, 2, 2, 2}
	cs = append(cs,
		Case[spec.MQAChunkedTopKInput]{"all-ties", spec.MQAChunkedTopKInput{Logits: [][]float32{ties, ties}, KS: []int64{0, 2}, KE: []int64{6, 6}, TopK: 3, ChunkRows: 1}},
		Case[spec.MQAChunkedTopKInput]{"signed-zeros-and-extremes", spec.MQAChunkedTopKInput{
			Logits: [][]float32{{float32(math.Copysign(0, -1)), 0, -math.MaxFloat32, math.MaxFloat32, -math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32}},
			KS:     []int64{0}, KE: []int64{6}, TopK: 4, ChunkRows: 1}},
		Case[spec.MQAChunkedTopKInput]{"no-rows", spec.MQAChunkedTopKInput{Logits: [][]float32{}, KS: []int64{}, KE: []int64{}, TopK: 2048, ChunkRows: 64}},
		Case[spec.MQAChunkedTopKInput]{"offset-at-int32-max", spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2, 3}}, KS: []int64{0}, KE: []int64{3}, TopK: 2, Offset: []int32{math.MaxInt32 - 2}, ChunkRows: 1}},
		Case[spec.MQAChunkedTopKInput]{"offset-past-int32-max", spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2, 3}}, KS: []int64{0}, KE: []int64{3}, TopK: 2, Offset: []int32{math.MaxInt32 - 1}, ChunkRows: 1}},
		Case[spec.MQAChunkedTopKInput]{"ks-after-ke", spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2, 3}}, KS: []int64{2}, KE: []int64{1}, TopK: 2, ChunkRows: 1}},
		Case[spec.MQAChunkedTopKInput]{"ke-past-kt", spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2, 3}}, KS: []int64{0}, KE: []int64{4}, TopK: 2, ChunkRows: 1}},
		Case[spec.MQAChunkedTopKInput]{"topk-zero", spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2, 3}}, KS: []int64{0}, KE: []int64{3}, TopK: 0, ChunkRows: 1}},
		Case[spec.MQAChunkedTopKInput]{"offset-short", spec.MQAChunkedTopKInput{Logits: [][]float32{{1}, {2}}, KS: []int64{0, 0}, KE: []int64{1, 1}, TopK: 1, Offset: []int32{5}, ChunkRows: 1}},
	)
	for _, c := range []int64{1, 2, 3, 4} {
		cs = append(cs, Case[spec.MQAChunkedTopKInput]{fmt.Sprintf("four-requests-chunk%d", c), spec.MQAChunkedTopKInput{
			Logits: [][]float32{{5, 1, 2, 0}, {1, 5, 2, 0}, {0, 0, 9, 1}, {7, 7, 7, 7}}, KS: []int64{0, 0, 2, 1}, KE: []int64{1, 2, 4, 4},
			TopK: 2, Offset: []int32{0, 1, 40, 90}, ChunkRows: c}})
	}
	return cs
}

// topkRejects names the boundary cases ref must reject.
func topkRejects() map[string]*spec.Sentinel {
	return map[string]*spec.Sentinel{
		"offset-past-int32-max": spec.ErrOverflow,
		"ks-after-ke":           spec.ErrShape,
		"ke-past-kt":            spec.ErrShape,
		"topk-zero":             spec.ErrShape,
		"offset-short":          spec.ErrShape,
	}
}

// topkRegressions: §8.6 bug 2's minimal input (Appendix A12): two rows of
// two requests, offsets [0, 10], one row per chunk; fixed row 1 emits
// j − ks + 10, the bug + 0.
func topkRegressions() []Case[spec.MQAChunkedTopKInput] {
	return []Case[spec.MQAChunkedTopKInput]{
		{"chunk-offsets-not-row-addressed", spec.MQAChunkedTopKInput{
			Logits: [][]float32{{1, 2}, {3, 4}}, KS: []int64{0, 0}, KE: []int64{2, 2}, TopK: 2, Offset: []int32{0, 10}, ChunkRows: 1}},
	}
}

// topkRowShape: one row per query row, each topk wide; the first
// min(topk, ke−ks) entries strictly ascending inside [off, off+ke−ks), the
// rest −1; when the window fits, exactly off, off+1, … (upstream's fast path).
func topkRowShape(_ spec.Limits, in spec.MQAChunkedTopKInput, out spec.MQAChunkedTopKOutput) error {
	if len(out.Indices) != len(in.Logits) {
		return fmt.Errorf("%d output rows for %d query rows", len(out.Indices), len(in.Logits))
	}
	for r, row := range out.Indices {
		if int64(len(row)) != in.TopK {
			return fmt.Errorf("row %d has %d entries, want topk=%d", r, len(row), in.TopK)
		}
		n, off := in.KE[r]-in.KS[r], topkOff(in, r)
		sel := min(n, in.TopK)
		for i, v := range row {
			switch {
			case int64(i) >= sel && v != -1:
				return fmt.Errorf("row %d entry %d = %d, want -1 padding", r, i, v)
			case int64(i) < sel && (int64(v) < off || int64(v) >= off+n):
				return fmt.Errorf("row %d entry %d = %d outside [%d, %d)", r, i, v, off, off+n)
			case int64(i) < sel && i > 0 && v <= row[i-1]:
				return fmt.Errorf("row %d entries %d, %d not ascending: %v", r, i-1, i, row)
			case n <= in.TopK && int64(i) < sel && int64(v) != off+int64(i):
				return fmt.Errorf("row %d: window of %d <= topk emits %d at %d, want %d", r, n, v, i, off+int64(i))
			}
		}
	}
	return nil
}

func topkOff(in spec.MQAChunkedTopKInput, r int) int64 {
	if len(in.Offset) == 0 {
		return 0
	}
	return int64(in.Offset[r])
}

// TopKBefore is §8.3's order written from its prose, independently of
// the sort key: a ranks before b (window positions ja < jb or not) when its
// score is higher, with NaN below everything (−Inf included), −0 equal to
// +0, and equal scores (and two NaNs) broken by the smaller j.
func TopKBefore(xa float32, ja int64, xb float32, jb int64) bool {
	na, nb := xa != xa, xb != xb
	switch {
	case na && nb:
		return ja < jb
	case na:
		return false
	case nb:
		return true
	case xa != xb: // −0 == +0 in float comparison
		return xa > xb
	}
	return ja < jb
}

// topkSelectsBest: every selected candidate ranks before every unselected
// one in the window, by TopKBefore.
func topkSelectsBest(_ spec.Limits, in spec.MQAChunkedTopKInput, out spec.MQAChunkedTopKOutput) error {
	for r, row := range out.Indices {
		ks, off := in.KS[r], topkOff(in, r)
		picked := map[int64]bool{}
		for _, v := range row {
			if v >= 0 {
				picked[ks+int64(v)-off] = true
			}
		}
		for a := range picked {
			for b := ks; b < in.KE[r]; b++ {
				if !picked[b] && !TopKBefore(in.Logits[r][a], a, in.Logits[r][b], b) {
					return fmt.Errorf("row %d: selected j=%d (%v) does not rank before unselected j=%d (%v)", r, a, in.Logits[r][a], b, in.Logits[r][b])
				}
			}
		}
	}
	return nil
}

// topkChunkedEqualsUnchunked is P8.1: the result equals the reference's
// with a single chunk.
func topkChunkedEqualsUnchunked(lim spec.Limits, in spec.MQAChunkedTopKInput, out spec.MQAChunkedTopKOutput) error {
	whole := in
	whole.ChunkRows = max(int64(len(in.Logits)), 1)
	want, err := ref.MQAChunkedTopK(lim, whole)
	if err != nil {
		return fmt.Errorf("ref unchunked: %v", err)
	}
	for r := range want.Indices {
		for i, v := range want.Indices[r] {
			if out.Indices[r][i] != v {
				return fmt.Errorf("row %d: chunked %v != unchunked %v", r, out.Indices[r], want.Indices[r])
			}
		}
	}
	return nil
}

package ref_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTopKKeyOrder pins §8.3's sort key: NaN (either sign) lowest, then
// −Inf, negatives, ±0 equal, positives, +Inf.
func TestTopKKeyOrder(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	ascending := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32, 0, math.SmallestNonzeroFloat32, 1, math.MaxFloat32, float32(math.Inf(1))}
	nan, negNaN := float32(math.NaN()), math.Float32frombits(0xFFC00001)
	if ref.MQATopKKey(nan) != 0 || ref.MQATopKKey(negNaN) != 0 {
		t.Errorf("NaN keys %#x, %#x, want 0", ref.MQATopKKey(nan), ref.MQATopKKey(negNaN))
	}
	if ref.MQATopKKey(negZero) != ref.MQATopKKey(0) {
		t.Errorf("key(-0) = %#x != key(+0) = %#x", ref.MQATopKKey(negZero), ref.MQATopKKey(0))
	}
	prev := uint32(0)
	for _, x := range ascending {
		if k := ref.MQATopKKey(x); k <= prev {
			t.Errorf("key(%v) = %#x not above the previous %#x", x, k, prev)
		} else {
			prev = k
		}
	}
}

// TestChunkedTopKWorkedExamples pins §8.3 and §8.6 bug 2 (Appendix A12).
func TestChunkedTopKWorkedExamples(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	cases := []struct {
		name string
		in   spec.MQAChunkedTopKInput
		want [][]int32
	}{
		{"§8.6 minimal: row 1 is offset by 10, chunk of one row",
			spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2}, {3, 4}}, KS: []int64{0, 0}, KE: []int64{2, 2}, TopK: 2, Offset: []int32{0, 10}, ChunkRows: 1},
			[][]int32{{0, 1}, {10, 11}}},
		{"window <= topk: 0..len-1 then -1 (upstream's fast path)",
			spec.MQAChunkedTopKInput{Logits: [][]float32{{9, 1, 5, 7}}, KS: []int64{1}, KE: []int64{3}, TopK: 4, ChunkRows: 1},
			[][]int32{{0, 1, -1, -1}}},
		{"best two emitted in ascending j, relative to ks",
			spec.MQAChunkedTopKInput{Logits: [][]float32{{0, 5, 1, 7, 2}}, KS: []int64{1}, KE: []int64{5}, TopK: 2, ChunkRows: 1},
			[][]int32{{0, 2}}},
		{"ties go to the smaller j",
			spec.MQAChunkedTopKInput{Logits: [][]float32{{3, 3, 3, 3}}, KS: []int64{0}, KE: []int64{4}, TopK: 2, ChunkRows: 1},
			[][]int32{{0, 1}}},
		{"-0 equals +0, so j decides",
			spec.MQAChunkedTopKInput{Logits: [][]float32{{-1, negZero, 0, -1}}, KS: []int64{0}, KE: []int64{4}, TopK: 1, ChunkRows: 1},
			[][]int32{{1}}},
		{"NaN ranks below -Inf",
			spec.MQAChunkedTopKInput{Logits: [][]float32{{nan, float32(math.Inf(-1)), nan}}, KS: []int64{0}, KE: []int64{3}, TopK: 2, ChunkRows: 1},
			[][]int32{{0, 1}}},
		{"empty window is all padding",
			spec.MQAChunkedTopKInput{Logits: [][]float32{{1, 2}}, KS: []int64{1}, KE: []int64{1}, TopK: 2, Offset: []int32{7}, ChunkRows: 1},
			[][]int32{{-1, -1}}},
		{"no rows", spec.MQAChunkedTopKInput{Logits: [][]float32{}, TopK: 4, ChunkRows: 1}, [][]int32{}},
	}
	for _, c := range cases {
		got, err := ref.MQAChunkedTopK(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, got.Indices); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestChunkedTopKRejectsBadInputNamingFieldAndBound pins §8.5.
func TestChunkedTopKRejectsBadInputNamingFieldAndBound(t *testing.T) {
	row := []float32{1, 2, 3}
	base := func() spec.MQAChunkedTopKInput {
		return spec.MQAChunkedTopKInput{Logits: [][]float32{row, row}, KS: []int64{0, 0}, KE: []int64{3, 3}, TopK: 2, ChunkRows: 1}
	}
	with := func(f func(*spec.MQAChunkedTopKInput)) spec.MQAChunkedTopKInput { in := base(); f(&in); return in }
	cases := []struct {
		in    spec.MQAChunkedTopKInput
		want  *spec.Sentinel
		field string
	}{
		{with(func(in *spec.MQAChunkedTopKInput) { in.ChunkRows = 0 }), spec.ErrShape, "chunk_rows"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.TopK = 0 }), spec.ErrShape, "topk"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.Logits = [][]float32{row, {1}} }), spec.ErrShape, "logits[1]"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.KS = []int64{0} }), spec.ErrShape, "ks"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.KE = []int64{3, 3, 3} }), spec.ErrShape, "ke"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.Offset = []int32{4} }), spec.ErrShape, "offset"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.TopK = 1 << 40 }), spec.ErrTooLarge, "topk"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.KS[1] = -1 }), spec.ErrNegative, "ks[1]"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.KS[1] = 3; in.KE[1] = 2 }), spec.ErrShape, "ks[1]"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.KE[0] = 4 }), spec.ErrShape, "ke[0]"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.Offset = []int32{0, -1} }), spec.ErrNegative, "offset[1]"},
		{with(func(in *spec.MQAChunkedTopKInput) { in.Offset = []int32{0, math.MaxInt32 - 1} }), spec.ErrOverflow, "offset[1]"},
	}
	for _, c := range cases {
		_, err := ref.MQAChunkedTopK(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}

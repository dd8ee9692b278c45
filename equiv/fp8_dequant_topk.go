package equiv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8DequantTopK is the differential spec of fp8.dequant_topk (docs/spec/cp-layout.md §7.6).
func FP8DequantTopK() *Spec[spec.FP8DequantTopKInput, spec.FP8DequantTopKOutput] {
	return &Spec[spec.FP8DequantTopKInput, spec.FP8DequantTopKOutput]{
		Op:       catalog.FP8DequantTopK(),
		Valid:    rapid.Custom(dequantTopKValid),
		Invalid:  rapid.Custom(dequantTopKInvalid),
		Boundary: dequantTopKBoundary(),
		Rejects: map[string]*spec.Sentinel{
			"index-equals-n":   spec.ErrTopKIndexOutOfRange,
			"index-minus-two":  spec.ErrTopKIndexOutOfRange,
			"empty-buffer-ref": spec.ErrTopKIndexOutOfRange,
		},
		Props: []Prop[spec.FP8DequantTopKInput, spec.FP8DequantTopKOutput]{
			{"rows-are-the-referenced-set", dequantTopKSet},
			{"equals-full-dequant-on-referenced-rows", dequantTopKFull},
			{"in-place-leaves-unreferenced-rows", dequantTopKInPlace},
			{"duplicates-and-order-do-not-matter", dequantTopKDuplicates},
			{"sparse-attention-equals-full-dequant-attention", dequantTopKAttention},
		},
	}
}

func dequantTopKValid(t *rapid.T) spec.FP8DequantTopKInput {
	n := rapid.IntRange(0, 8).Draw(t, "n")
	kq := catalog.SeededRows(spec.FP8RowBytes, n, rapid.Uint32().Draw(t, "kq_seed"))
	q := rapid.IntRange(0, 4).Draw(t, "q")
	topk := make([][]int32, q)
	for i := range topk {
		topk[i] = rapid.SliceOfN(rapid.Int32Range(-1, int32(n)-1), 0, 6).Draw(t, fmt.Sprintf("topk%d", i))
		if topk[i] == nil {
			topk[i] = []int32{}
		}
	}
	return spec.FP8DequantTopKInput{Kq: kq, TopK: topk, Verify: rapid.Bool().Draw(t, "verify")}
}

func dequantTopKInvalid(t *rapid.T) Bad[spec.FP8DequantTopKInput] {
	in := dequantTopKValid(t)
	if rapid.Bool().Draw(t, "bad_kq") {
		if rapid.Bool().Draw(t, "wide") {
			in.Kq = spec.Rows{W: spec.DequantRowBytes, B: make([]byte, spec.DequantRowBytes*in.Kq.N())}
			return Bad[spec.FP8DequantTopKInput]{in, spec.ErrUnsupportedDims}
		}
		in.Kq = spec.Rows{W: spec.FP8RowBytes, B: append(bytes.Clone(in.Kq.B), 1)}
		return Bad[spec.FP8DequantTopKInput]{in, spec.ErrRowCount}
	}
	n := int32(in.Kq.N())
	topk := make([][]int32, len(in.TopK)+1)
	for i, row := range in.TopK {
		topk[i] = slices.Clone(row)
	}
	topk[len(in.TopK)] = []int32{}
	q := rapid.IntRange(0, len(topk)-1).Draw(t, "bad_q")
	j := rapid.IntRange(0, len(topk[q])).Draw(t, "bad_j")
	bad := rapid.SampledFrom([]int32{-2, n, n + 3, -1 << 31}).Draw(t, "bad_idx")
	topk[q] = slices.Insert(topk[q], j, bad)
	in.TopK = topk
	return Bad[spec.FP8DequantTopKInput]{in, spec.ErrTopKIndexOutOfRange}
}

func dequantTopKBoundary() []Case[spec.FP8DequantTopKInput] {
	kq := catalog.SeededRows(spec.FP8RowBytes, 5, 29)
	// Row 4: all-NaN codes (0x7F / 0xFF alternate), a zero scale and an Inf scale.
	r := kq.Row(4)
	for j := range 512 {
		r[j] = 0x7F | byte(j%2)<<7
	}
	copy(r[512:528], []byte{0, 0, 0, 0, 0, 0, 0x80, 0x7F, 0, 0, 0, 0, 0, 0, 0x80, 0xFF})
	return []Case[spec.FP8DequantTopKInput]{
		{"no-queries", spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{}}},
		{"all-empty-entries", spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{{-1, -1}, {}}}},
		{"empty-buffer", spec.FP8DequantTopKInput{Kq: spec.Rows{W: spec.FP8RowBytes, B: []byte{}}, TopK: [][]int32{{-1}}}},
		{"nan-codes-and-odd-scales", spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{{4, 0}}, Verify: true}},
		{"duplicates-across-queries", spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{{3, 1, 3}, {1, -1, 3}}, Verify: true}},
		{"every-row", spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{{4, 3, 2, 1, 0}}}},
		{"index-equals-n", spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{{0}, {5}}}},
		{"index-minus-two", spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{{-2}}}},
		{"empty-buffer-ref", spec.FP8DequantTopKInput{Kq: spec.Rows{W: spec.FP8RowBytes, B: []byte{}}, TopK: [][]int32{{0}}}},
	}
}

// referencedSet is Rset of §7.6, ascending.
func referencedSet(topk [][]int32) []int64 {
	var ids []int64
	for _, q := range topk {
		for _, idx := range q {
			if idx >= 0 && !slices.Contains(ids, int64(idx)) {
				ids = append(ids, int64(idx))
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// dequantTopKSet: the written rows are exactly Rset, ascending, once each.
func dequantTopKSet(_ spec.Limits, in spec.FP8DequantTopKInput, out spec.FP8DequantTopKOutput) error {
	want := referencedSet(in.TopK)
	if !slices.Equal(out.RowIDs, want) && !(len(want) == 0 && len(out.RowIDs) == 0) {
		return fmt.Errorf("row_ids %v, want Rset %v", out.RowIDs, want)
	}
	if out.Rows.W != spec.DequantRowBytes || out.Rows.N() != len(out.RowIDs) {
		return fmt.Errorf("%d rows of %d B for %d ids", out.Rows.N(), out.Rows.W, len(out.RowIDs))
	}
	return nil
}

// dequantTopKFull is P7.8: every written row equals the full dequant's row.
func dequantTopKFull(_ spec.Limits, in spec.FP8DequantTopKInput, out spec.FP8DequantTopKOutput) error {
	full := ref.FullDequant656(in.Kq)
	for i, id := range out.RowIDs {
		if !bytes.Equal(out.Rows.Row(i), full.Row(int(id))) {
			return fmt.Errorf("row %d differs from the full dequant", id)
		}
	}
	return nil
}

// dequantTopKInPlace is P7.8 on a pre-filled buffer: the in-place dequant
// writes exactly the op's rows, every other row keeps the sentinel, and
// topk is not modified.
func dequantTopKInPlace(_ spec.Limits, in spec.FP8DequantTopKInput, out spec.FP8DequantTopKOutput) error {
	buf := ref.NewRows(spec.DequantRowBytes, in.Kq.N())
	for i := range buf.B {
		buf.B[i] = 0xA5
	}
	topk := make([][]int32, len(in.TopK))
	for i, q := range in.TopK {
		topk[i] = slices.Clone(q)
	}
	if err := ref.DequantTopKInPlace(in.Kq, topk, buf, in.Verify); err != nil {
		return err
	}
	for i, q := range in.TopK {
		if !slices.Equal(topk[i], q) {
			return fmt.Errorf("topk[%d] modified: %v, was %v", i, topk[i], q)
		}
	}
	j := 0
	for row := range buf.N() {
		if j < len(out.RowIDs) && out.RowIDs[j] == int64(row) {
			if !bytes.Equal(buf.Row(row), out.Rows.Row(j)) {
				return fmt.Errorf("in-place row %d differs from the op's row", row)
			}
			j++
			continue
		}
		if !allByte(buf.Row(row), 0xA5) {
			return fmt.Errorf("unreferenced row %d lost its sentinel", row)
		}
	}
	return nil
}

func allByte(b []byte, v byte) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return true
}

// dequantTopKDuplicates is P7.10: repeating every query reversed, and
// adding -1 entries, does not change the result.
func dequantTopKDuplicates(lim spec.Limits, in spec.FP8DequantTopKInput, out spec.FP8DequantTopKOutput) error {
	topk := [][]int32{{-1}}
	for _, q := range in.TopK {
		topk = append(topk, slices.Clone(q))
		r := slices.Clone(q)
		slices.Reverse(r)
		topk = append(topk, r)
	}
	got, err := ref.FP8DequantTopK(lim, spec.FP8DequantTopKInput{Kq: in.Kq, TopK: topk})
	if err != nil {
		return err
	}
	if !slices.Equal(got.RowIDs, out.RowIDs) || !bytes.Equal(got.Rows.B, out.Rows.B) {
		return fmt.Errorf("duplicated/reordered topk changed the result")
	}
	return nil
}

// sparseAttention is a reference sparse attention over topk (docs/spec/cp-layout.md
// §7.6 P7.9) that reads only the rows top-k names, through row(id): per
// query q a fixed query vector, and the score Σ over q's entries (in
// order, duplicates included, -1 skipped) of the fp32 dot product with the
// row's 576 bf16 values — softmax-free, every product and sum one fp32
// operation in a fixed order, so two row sources agree bit for bit exactly
// when the rows they return do.
func sparseAttention(topk [][]int32, row func(id int64) []byte) []uint32 {
	out := make([]uint32, len(topk))
	for q, ids := range topk {
		var acc float32
		for _, id := range ids {
			if id < 0 {
				continue
			}
			r := row(int64(id))
			for j := range spec.MLANopeDim + spec.MLARopeDim {
				qv := float32((q*31+j)%17-8) / 8
				k := math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2*j:])) << 16)
				acc = float32(acc + float32(qv*k))
			}
		}
		out[q] = math.Float32bits(acc)
	}
	return out
}

// dequantTopKAttention is P7.9: the reference sparse attention over topk
// gives identical results reading the op's top-k rows and reading the
// full dequant of Kq.
func dequantTopKAttention(_ spec.Limits, in spec.FP8DequantTopKInput, out spec.FP8DequantTopKOutput) error {
	full := ref.FullDequant656(in.Kq)
	fromFull := sparseAttention(in.TopK, func(id int64) []byte { return full.Row(int(id)) })
	missing := int64(-1)
	fromTopK := sparseAttention(in.TopK, func(id int64) []byte {
		i, ok := slices.BinarySearch(out.RowIDs, id)
		if !ok || i >= out.Rows.N() {
			missing = id
			return make([]byte, spec.DequantRowBytes)
		}
		return out.Rows.Row(i)
	})
	if missing >= 0 {
		return fmt.Errorf("attention read row %d, which the top-k dequant did not write", missing)
	}
	for q := range fromFull {
		if fromTopK[q] != fromFull[q] {
			return fmt.Errorf("query %d: score %#x with top-k dequant, %#x with full dequant", q, fromTopK[q], fromFull[q])
		}
	}
	return nil
}

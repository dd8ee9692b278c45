package ref

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// ValidateFP8DequantTopK checks kq's shape (ErrRowCount) and width (656,
// ErrUnsupportedDims), then
// every top-k entry in query-major order: -1 <= idx < N, else
// ErrTopKIndexOutOfRange (docs/spec/cp-layout.md §7.6 step 1: before any write).
func ValidateFP8DequantTopK(kq spec.Rows, topk [][]int32) error {
	if err := CheckFP8Rows("kq", kq); err != nil {
		return err
	}
	n := int64(kq.N())
	for q, row := range topk {
		for j, idx := range row {
			if idx < -1 || int64(idx) >= n {
				return spec.Reject(spec.ErrTopKIndexOutOfRange, fmt.Sprintf("topk[%d][%d]", q, j), idx, fmt.Sprintf("in [-1, N=%d)", n))
			}
		}
	}
	return nil
}

// DequantRowInto656 dequantizes one 656-byte row into 1152 bytes (docs/spec/cp-layout.md
// §7.2): nope out_j = bf16RNE(fl32(dec(code_j)·s_t)) with s_t the tile's
// fp32 scale (a NaN code gives 0x7FC0), rope bytes copied.
func DequantRowInto656(dst, src []byte) {
	for j, h := range DequantRow656([spec.FP8RowBytes]byte(src[:spec.FP8RowBytes])) {
		binary.LittleEndian.PutUint16(dst[2*j:], h)
	}
}

// FullDequant656 dequantizes every row of kq (the old, correct, expensive
// path §7.6 replaces). kq must hold 656-byte rows.
func FullDequant656(kq spec.Rows) spec.Rows {
	out := NewRows(spec.DequantRowBytes, kq.N())
	for i := range kq.N() {
		DequantRowInto656(out.Row(i), kq.Row(i))
	}
	return out
}

// DequantTopKInPlace is docs/spec/cp-layout.md §7.6 on a caller's buffer: validate
// every index, then write out[row] = Dequant(kq[row]) once for each
// distinct row >= 0 in topk; other rows of out keep their bytes and topk is
// not modified. out must hold N rows of 1152 B (ErrRowCount). With verify
// the full dequant is computed and compared on the written rows.
func DequantTopKInPlace(kq spec.Rows, topk [][]int32, out spec.Rows, verify bool) error {
	if err := ValidateFP8DequantTopK(kq, topk); err != nil {
		return err
	}
	if out.W != spec.DequantRowBytes {
		return spec.Reject(spec.ErrRowCount, "out.w", out.W, fmt.Sprintf("%d", spec.DequantRowBytes))
	}
	if err := out.CheckRows("out", kq.N()); err != nil {
		return err
	}
	done := map[int32]bool{}
	for _, q := range topk {
		for _, idx := range q {
			if idx < 0 || done[idx] {
				continue
			}
			done[idx] = true
			DequantRowInto656(out.Row(int(idx)), kq.Row(int(idx)))
		}
	}
	if verify {
		full := FullDequant656(kq)
		for _, idx := range sortedKeys(done) {
			if string(full.Row(int(idx))) != string(out.Row(int(idx))) {
				return spec.Reject(spec.ErrDequantVerifyMismatch, spec.Idx("kq", int(idx)), idx, "top-k row equal to the full dequant")
			}
		}
	}
	return nil
}

func sortedKeys(m map[int32]bool) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FP8DequantTopK is fp8.dequant_topk (docs/spec/cp-layout.md §7.6): the distinct
// referenced rows, ascending, each dequantized once. With verify, each is
// compared against the full dequant of the buffer.
func FP8DequantTopK(lim spec.Limits, in spec.FP8DequantTopKInput) (spec.FP8DequantTopKOutput, error) {
	if err := ValidateFP8DequantTopK(in.Kq, in.TopK); err != nil {
		return spec.FP8DequantTopKOutput{}, err
	}
	set := map[int32]bool{}
	for _, q := range in.TopK {
		for _, idx := range q {
			if idx >= 0 {
				set[idx] = true
			}
		}
	}
	ids := sortedKeys(set)
	if err := lim.CheckOutput("topk", int64(len(ids)), spec.DequantRowBytes); err != nil {
		return spec.FP8DequantTopKOutput{}, err
	}
	out := spec.FP8DequantTopKOutput{RowIDs: make([]int64, len(ids)), Rows: NewRows(spec.DequantRowBytes, len(ids))}
	for i, idx := range ids {
		out.RowIDs[i] = int64(idx)
		DequantRowInto656(out.Rows.Row(i), in.Kq.Row(int(idx)))
	}
	if in.Verify {
		full := FullDequant656(in.Kq)
		for i, idx := range ids {
			if string(full.Row(int(idx))) != string(out.Rows.Row(i)) {
				return spec.FP8DequantTopKOutput{}, spec.Reject(spec.ErrDequantVerifyMismatch, spec.Idx("kq", int(idx)), idx, "top-k row equal to the full dequant")
			}
		}
	}
	return out, nil
}

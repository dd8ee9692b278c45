package fast

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// e4m3Decode is DecodeE4M3 for every code: exact fp32 values, NaN for the
// two NaN codes.
var e4m3Decode = func() (t [256]float32) {
	for c := range 256 {
		t[c] = ref.DecodeE4M3(uint8(c))
	}
	return t
}()

// dequantRow is ref.DequantRowInto656 with the decode as a table lookup.
func dequantRow(dst, src []byte) {
	dst = dst[:spec.DequantRowBytes]
	src = src[:spec.FP8RowBytes]
	for t := range 4 {
		s := math.Float32frombits(binary.LittleEndian.Uint32(src[512+4*t:]))
		codes := src[t*128 : t*128+128]
		d := dst[t*256 : t*256+256]
		for j, c := range codes {
			binary.LittleEndian.PutUint16(d[2*j:], ref.BF16FromF32(float32(e4m3Decode[c]*s)))
		}
	}
	copy(dst[1024:], src[528:])
}

// FullDequant656 is ref.FullDequant656 on the table decode (the baseline
// the top-k path is measured against).
func FullDequant656(kq spec.Rows) spec.Rows {
	out := ref.NewRows(spec.DequantRowBytes, kq.N())
	for i := range kq.N() {
		dequantRow(out.B[i*spec.DequantRowBytes:], kq.B[i*spec.FP8RowBytes:])
	}
	return out
}

// referenced marks the distinct rows >= 0 of topk in a bitset of n bits.
func referenced(topk [][]int32, n int) []uint64 {
	set := make([]uint64, (n+63)/64)
	for _, q := range topk {
		for _, idx := range q {
			if idx >= 0 {
				set[idx>>6] |= 1 << (idx & 63)
			}
		}
	}
	return set
}

// DequantTopKInPlace is the twin of ref.DequantTopKInPlace (docs/spec/cp-layout.md
// §7.6): a bitset of the referenced rows, then one table-driven dequant per
// set bit; the cost is the referenced rows plus N/64 words.
func DequantTopKInPlace(kq spec.Rows, topk [][]int32, out spec.Rows, verify bool) error {
	if err := ref.ValidateFP8DequantTopK(kq, topk); err != nil {
		return err
	}
	if out.W != spec.DequantRowBytes {
		return spec.Reject(spec.ErrRowCount, "out.w", out.W, fmt.Sprintf("%d", spec.DequantRowBytes))
	}
	if err := out.CheckRows("out", kq.N()); err != nil {
		return err
	}
	set := referenced(topk, kq.N())
	var tmp []byte
	if verify {
		tmp = make([]byte, spec.DequantRowBytes)
	}
	for w, word := range set {
		for word != 0 {
			row := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			dst := out.B[row*spec.DequantRowBytes : (row+1)*spec.DequantRowBytes]
			dequantRow(dst, kq.B[row*spec.FP8RowBytes:])
			if verify {
				ref.DequantRowInto656(tmp, kq.Row(row))
				if string(tmp) != string(dst) {
					return spec.Reject(spec.ErrDequantVerifyMismatch, spec.Idx("kq", row), int32(row), "top-k row equal to the full dequant")
				}
			}
		}
	}
	return nil
}

// FP8DequantTopK is the twin of ref.FP8DequantTopK (docs/spec/cp-layout.md §7.6).
func FP8DequantTopK(lim spec.Limits, in spec.FP8DequantTopKInput) (spec.FP8DequantTopKOutput, error) {
	if err := ref.ValidateFP8DequantTopK(in.Kq, in.TopK); err != nil {
		return spec.FP8DequantTopKOutput{}, err
	}
	set := referenced(in.TopK, in.Kq.N())
	k := 0
	for _, w := range set {
		k += bits.OnesCount64(w)
	}
	if err := lim.CheckOutput("topk", int64(k), spec.DequantRowBytes); err != nil {
		return spec.FP8DequantTopKOutput{}, err
	}
	out := spec.FP8DequantTopKOutput{RowIDs: make([]int64, 0, k), Rows: ref.NewRows(spec.DequantRowBytes, k)}
	var full spec.Rows
	if in.Verify {
		full = ref.FullDequant656(in.Kq)
	}
	for w, word := range set {
		for word != 0 {
			row := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			i := len(out.RowIDs)
			out.RowIDs = append(out.RowIDs, int64(row))
			dequantRow(out.Rows.B[i*spec.DequantRowBytes:], in.Kq.B[row*spec.FP8RowBytes:])
			if in.Verify && string(full.Row(row)) != string(out.Rows.Row(i)) {
				return spec.FP8DequantTopKOutput{}, spec.Reject(spec.ErrDequantVerifyMismatch, spec.Idx("kq", row), int32(row), "top-k row equal to the full dequant")
			}
		}
	}
	return out, nil
}

//go:build cuda

package cuda

import (
	"math/bits"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8DequantTopK is the CUDA twin of ref.FP8DequantTopK (docs/spec/cp-layout.md
// §7.6): ref's index validation on the host, the distinct referenced rows
// found with a bitset (ascending), only those rows gathered and uploaded,
// and fp8_dequant_topk_rows dequantizes them (one thread per 16-byte
// output word): transfers and device work are proportional to the
// referenced rows, not to N. With Verify each device row is compared with
// ref's dequantization of the same row (what the full dequant holds
// there), an independent check of the kernel.
func FP8DequantTopK(lim spec.Limits, in spec.FP8DequantTopKInput) (spec.FP8DequantTopKOutput, error) {
	if err := ref.ValidateFP8DequantTopK(in.Kq, in.TopK); err != nil {
		return spec.FP8DequantTopKOutput{}, err
	}
	ids := referencedRows(in.TopK, in.Kq.N())
	if err := lim.CheckOutput("topk", int64(len(ids)), spec.DequantRowBytes); err != nil {
		return spec.FP8DequantTopKOutput{}, err
	}
	out := spec.FP8DequantTopKOutput{RowIDs: ids, Rows: ref.NewRows(spec.DequantRowBytes, len(ids))}
	if len(ids) == 0 {
		return out, nil
	}
	packed := make([]byte, len(ids)*spec.FP8RowBytes)
	for i, id := range ids {
		copy(packed[i*spec.FP8RowBytes:], in.Kq.Row(int(id)))
	}
	err := run("fp8.dequant_topk", func(c *call) error {
		dsrc, err := c.upload(packed)
		if err != nil {
			return err
		}
		n := int64(len(ids))
		dout, err := c.alloc(n * spec.DequantRowBytes)
		if err != nil {
			return err
		}
		if err := c.launch("fp8_dequant_topk_rows", n*dequantItems, dout, dsrc, n); err != nil {
			return err
		}
		return c.download(out.Rows.B, dout)
	})
	if err != nil {
		return spec.FP8DequantTopKOutput{}, err
	}
	if in.Verify {
		want := make([]byte, spec.DequantRowBytes)
		for i, id := range ids {
			ref.DequantRowInto656(want, in.Kq.Row(int(id)))
			if string(want) != string(out.Rows.Row(i)) {
				return spec.FP8DequantTopKOutput{}, spec.Reject(spec.ErrDequantVerifyMismatch, spec.Idx("kq", int(id)), int32(id), "top-k row equal to the full dequant")
			}
		}
	}
	return out, nil
}

// referencedRows is the distinct ids >= 0 of topk (validated below n),
// ascending, through a bitset of n bits (bounded by the input's rows).
func referencedRows(topk [][]int32, n int) []int64 {
	set := make([]uint64, (n+63)/64)
	k := 0
	for _, q := range topk {
		for _, idx := range q {
			if idx >= 0 && set[idx>>6]&(1<<(idx&63)) == 0 {
				set[idx>>6] |= 1 << (idx & 63)
				k++
			}
		}
	}
	ids := make([]int64, 0, k)
	for w, word := range set {
		for word != 0 {
			ids = append(ids, int64(w*64+bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return ids
}

package ref_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestDequantRowWorked is §7.2's worked dequant: with s = fl32(2/448)
// (0x3B924925) 0x76 → 1.0 (0x3F80), 0xFE → −2.0 (0xC000), 0x68 →
// 0.28515625 (0x3E92); a NaN code → 0x7FC0; the rope bytes are copied.
func TestDequantRowWorked(t *testing.T) {
	src := make([]byte, spec.FP8RowBytes)
	copy(src, []byte{0x76, 0xFE, 0x68, 0x7F, 0xFF})
	binary.LittleEndian.PutUint32(src[512:], 0x3B924925)
	for i := 528; i < spec.FP8RowBytes; i++ {
		src[i] = byte(i)
	}
	dst := make([]byte, spec.DequantRowBytes)
	ref.DequantRowInto656(dst, src)
	for j, want := range []uint16{0x3F80, 0xC000, 0x3E92, 0x7FC0, 0x7FC0, 0} {
		if got := binary.LittleEndian.Uint16(dst[2*j:]); got != want {
			t.Errorf("value %d = %#04x, want %#04x", j, got, want)
		}
	}
	for i := range 128 {
		if dst[1024+i] != byte(528+i) {
			t.Fatalf("rope byte %d not copied", i)
		}
	}
}

// TestDequantTopKInPlace: only referenced rows are written (P7.8), topk is
// unchanged, and a bad index is rejected before any write (§7.6 step 1).
func TestDequantTopKInPlace(t *testing.T) {
	kq := ref.NewRows(spec.FP8RowBytes, 4)
	for i := range kq.B {
		kq.B[i] = byte(i * 7)
	}
	out := ref.NewRows(spec.DequantRowBytes, 4)
	for i := range out.B {
		out.B[i] = 0xA5
	}
	topk := [][]int32{{2, -1, 2}, {0}}
	if err := ref.DequantTopKInPlace(kq, topk, out, true); err != nil {
		t.Fatal(err)
	}
	full := ref.FullDequant656(kq)
	for row, touched := range []bool{true, false, true, false} {
		if touched && string(out.Row(row)) != string(full.Row(row)) {
			t.Errorf("row %d differs from the full dequant", row)
		}
		if !touched && out.Row(row)[0] != 0xA5 {
			t.Errorf("row %d was written", row)
		}
	}
	if topk[0][2] != 2 || topk[0][1] != -1 {
		t.Error("topk modified")
	}
	clean := ref.NewRows(spec.DequantRowBytes, 4)
	err := ref.DequantTopKInPlace(kq, [][]int32{{1}, {4}}, clean, false)
	if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrTopKIndexOutOfRange) || ie.Field != "topk[1][0]" {
		t.Errorf("index 4 of 4 rows: got %v", err)
	}
	for _, b := range clean.B {
		if b != 0 {
			t.Fatal("a rejected call wrote out")
		}
	}
}

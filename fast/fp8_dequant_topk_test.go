package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// fp8Buffer is n pseudo-random 656-byte rows (catalog.SeededRows).
func fp8Buffer(n int) spec.Rows { return catalog.SeededRows(spec.FP8RowBytes, n, 0x9E3779B9) }

func sentinelOut(n int) spec.Rows {
	out := ref.NewRows(spec.DequantRowBytes, n)
	for i := range out.B {
		out.B[i] = 0xA5
	}
	return out
}

// TestDequantTopKInPlaceMatchesRef: on random bytes (NaN codes, odd
// scales) the fast in-place twin writes what ref writes, with verify on
// and off, and leaves the same rows untouched.
func TestDequantTopKInPlaceMatchesRef(t *testing.T) {
	kq := fp8Buffer(300)
	topk := [][]int32{{5, -1, 299, 5, 0}, {}, {17, 64, 63, 128, -1}}
	for _, verify := range []bool{false, true} {
		a, b := sentinelOut(300), sentinelOut(300)
		if err := ref.DequantTopKInPlace(kq, topk, a, verify); err != nil {
			t.Fatal(err)
		}
		if err := fast.DequantTopKInPlace(kq, topk, b, verify); err != nil {
			t.Fatal(err)
		}
		if string(a.B) != string(b.B) {
			t.Fatalf("verify=%v: fast in-place differs from ref", verify)
		}
	}
	full := fast.FullDequant656(kq)
	if string(full.B) != string(ref.FullDequant656(kq).B) {
		t.Fatal("fast full dequant differs from ref")
	}
	err := fast.DequantTopKInPlace(kq, [][]int32{{0, 300}}, sentinelOut(300), false)
	if ie, ok := spec.AsInputError(err); !ok || ie.Field != "topk[0][1]" {
		t.Errorf("index 300 of 300: got %v", err)
	}
}

// benchTopK: 2,048 distinct rows spread through a 128K-row buffer.
func benchTopK(n int) [][]int32 {
	q := make([]int32, 2048)
	for j := range q {
		q[j] = int32(j * (n / 2048))
	}
	return [][]int32{q}
}

// BenchmarkDequantTopK2048of128K is §7.6's target: the in-place top-k
// dequant of 2,048 rows of a 128K-row buffer, to compare with
// BenchmarkDequantFull128K (>= 20× cheaper required).
func BenchmarkDequantTopK2048of128K(b *testing.B) {
	const n = 128 << 10
	kq, out, topk := fp8Buffer(n), sentinelOut(n), benchTopK(n)
	b.SetBytes(2048 * spec.FP8RowBytes)
	for b.Loop() {
		if err := fast.DequantTopKInPlace(kq, topk, out, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDequantFull128K is the full dequant the top-k path replaces.
func BenchmarkDequantFull128K(b *testing.B) {
	kq := fp8Buffer(128 << 10)
	b.SetBytes(128 << 10 * spec.FP8RowBytes)
	for b.Loop() {
		_ = fast.FullDequant656(kq)
	}
}

// BenchmarkDequantTopK2048of128KRef is the ref twin of the top-k path.
func BenchmarkDequantTopK2048of128KRef(b *testing.B) {
	const n = 128 << 10
	kq, out, topk := fp8Buffer(n), sentinelOut(n), benchTopK(n)
	for b.Loop() {
		if err := ref.DequantTopKInPlace(kq, topk, out, false); err != nil {
			b.Fatal(err)
		}
	}
}

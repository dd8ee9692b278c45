package fast_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// bf16Rows is n rows of w bytes of random finite bf16 values of mixed
// magnitude (subnormals, ties, zero runs), seeded.
func bf16Rows(w, n int, seed uint64) spec.Rows {
	r := rand.New(rand.NewPCG(seed, 7))
	x := ref.NewRows(w, n)
	for i := 0; i < len(x.B); i += 2 {
		h := uint16(r.Uint32())
		switch r.IntN(8) {
		case 0:
			h = 0
		case 1:
			h &= 0x807F // subnormal
		case 2:
			h = h&0x80FF | 0x3F00 // around 0.5..2
		}
		if h&0x7F80 == 0x7F80 {
			h &^= 0x0400
		}
		binary.LittleEndian.PutUint16(x.B[i:], h)
	}
	return x
}

// TestFP8QuantizeRowFastMatchesRef runs both twins in every mode on a
// parallel-sized input (so goroutine chunks are taken) with zero rows and
// one non-finite row late in the input.
func TestFP8QuantizeRowFastMatchesRef(t *testing.T) {
	lim := spec.DefaultLimits()
	x := bf16Rows(spec.MLABF16RowBytes, 5000, 1)
	clear(x.Row(3))
	for _, m := range []spec.ScaleMode{"", spec.ScaleDivFP32, spec.ScaleRecipFP32, spec.ScaleDivBF16} {
		in := spec.FP8QuantizeRowInput{Mode: m, X: x}
		want, err1 := ref.FP8QuantizeRow(lim, in)
		got, err2 := fast.FP8QuantizeRow(lim, in)
		if err1 != nil || err2 != nil || !bytes.Equal(want.Rows.B, got.Rows.B) || got.Rows.W != spec.FP8RowBytes {
			t.Fatalf("mode %q: ref/fast differ (%v, %v)", m, err1, err2)
		}
	}
	bad := spec.Rows{W: x.W, B: bytes.Clone(x.B)}
	binary.LittleEndian.PutUint16(bad.Row(4321)[2*550:], 0xFF80)
	binary.LittleEndian.PutUint16(bad.Row(4500)[0:], 0x7FC0)
	_, err1 := ref.FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{X: bad})
	_, err2 := fast.FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{X: bad})
	var ie *spec.InputError
	if !errors.As(err2, &ie) || ie.Field != "x[4321].rope[38]" || err1.Error() != err2.Error() {
		t.Fatalf("non-finite: ref %v, fast %v", err1, err2)
	}
}

func TestFP8QuantizeIndexKFastMatchesRef(t *testing.T) {
	lim := spec.DefaultLimits()
	x := bf16Rows(spec.IndexKBF16RowBytes, 9000, 2)
	clear(x.Row(10))
	in := spec.FP8QuantizeIndexKInput{X: x}
	want, err1 := ref.FP8QuantizeIndexK(lim, in)
	got, err2 := fast.FP8QuantizeIndexK(lim, in)
	if err1 != nil || err2 != nil || !bytes.Equal(want.Rows.B, got.Rows.B) {
		t.Fatalf("ref/fast differ (%v, %v)", err1, err2)
	}
	binary.LittleEndian.PutUint16(x.Row(8000)[2*5:], 0x7F80)
	_, err1 = ref.FP8QuantizeIndexK(lim, in)
	_, err2 = fast.FP8QuantizeIndexK(lim, in)
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Fatalf("non-finite: ref %v, fast %v", err1, err2)
	}
}

// TestQuantizeRowSweepsEveryBF16: for tile maxima across the range (the
// worked ones, tiny ones with subnormal scales, the largest bf16), every
// finite bf16 magnitude at most amax, both signs, quantized by fast in every
// mode equals ref — the multiply-then-check-the-boundary path included.
func TestQuantizeRowSweepsEveryBF16(t *testing.T) {
	for _, amax := range []uint16{0x3F80, 0x3F44, 0x3F81, 0x4000, 0x43E0, 0x7F7F, 0x0180, 0x0001, 0x0080, 0x00FF, 0x2F3A} {
		x := ref.NewRows(spec.MLABF16RowBytes, 0)
		row := make([]byte, spec.MLABF16RowBytes)
		j := 0
		flush := func() {
			x.B = append(x.B, row...)
			clear(row)
			j = 0
		}
		for h := uint16(0); h <= amax; h++ {
			if j%spec.FP8TileDim == 0 {
				binary.LittleEndian.PutUint16(row[2*j:], amax)
				j++
			}
			sign := uint16(h&1) << 15
			binary.LittleEndian.PutUint16(row[2*j:], h|sign)
			if j++; j == spec.MLANopeDim {
				flush()
			}
		}
		flush()
		for _, m := range []spec.ScaleMode{spec.ScaleDivFP32, spec.ScaleRecipFP32, spec.ScaleDivBF16} {
			in := spec.FP8QuantizeRowInput{Mode: m, X: x}
			want, err1 := ref.FP8QuantizeRow(spec.DefaultLimits(), in)
			got, err2 := fast.FP8QuantizeRow(spec.DefaultLimits(), in)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			for i := range x.N() {
				if !bytes.Equal(want.Rows.Row(i), got.Rows.Row(i)) {
					t.Fatalf("amax %#04x mode %s row %d: fast differs from ref", amax, m, i)
				}
			}
		}
	}
}

// TestQuantizeRows656NoAlloc: the into-buffer path allocates nothing per
// row, so the op's only allocation is its output.
func TestQuantizeRows656NoAlloc(t *testing.T) {
	x := bf16Rows(spec.MLABF16RowBytes, 64, 3)
	dst := make([]byte, 64*spec.FP8RowBytes)
	if a := testing.AllocsPerRun(10, func() { fast.QuantizeRows656(dst, x.B, spec.ScaleDivFP32) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
	k := bf16Rows(spec.IndexKBF16RowBytes, 64, 4)
	kd := make([]byte, 64*spec.IndexKRowBytes)
	if a := testing.AllocsPerRun(10, func() { fast.QuantizeIndexKRows(kd, k.B) }); a != 0 {
		t.Errorf("index-K: %v allocations", a)
	}
}

// Run: go test -run '^$' -bench FP8Quantize -benchmem ./fast/
// (SetBytes is the bf16 input; -cpu 1 gives the per-core figure.)
func BenchmarkFP8QuantizeRow128K(b *testing.B) {
	x := catalog.BF16BenchRows(spec.MLABF16RowBytes, 128<<10)
	in := spec.FP8QuantizeRowInput{X: x}
	lim := spec.DefaultLimits()
	for _, c := range []struct {
		name string
		f    func(spec.Limits, spec.FP8QuantizeRowInput) (spec.FP8QuantizeRowOutput, error)
	}{{"ref", ref.FP8QuantizeRow}, {"fast", fast.FP8QuantizeRow}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(x.B)))
			for b.Loop() {
				if _, err := c.f(lim, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("fast-into", func(b *testing.B) {
		dst := make([]byte, x.N()*spec.FP8RowBytes)
		b.SetBytes(int64(len(x.B)))
		for b.Loop() {
			fast.QuantizeRows656(dst, x.B, spec.ScaleDivFP32)
		}
	})
}

func BenchmarkFP8QuantizeRowModes(b *testing.B) {
	x := catalog.BF16BenchRows(spec.MLABF16RowBytes, 16<<10)
	dst := make([]byte, x.N()*spec.FP8RowBytes)
	for _, m := range []spec.ScaleMode{spec.ScaleDivFP32, spec.ScaleRecipFP32} {
		b.Run(string(m), func(b *testing.B) {
			b.SetBytes(int64(len(x.B)))
			for b.Loop() {
				fast.QuantizeRows656(dst, x.B, m)
			}
		})
	}
}

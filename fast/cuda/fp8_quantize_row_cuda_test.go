//go:build cuda

package cuda_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// sameResultAsRef fails t unless the CUDA twin's canonical encoding (the
// output, or the error object: errors are part of the output) is
// byte-identical to ref's.
func sameResultAsRef[Out any](t *testing.T, what string, want Out, werr error, got Out, gerr error) {
	t.Helper()
	w, g := catalog.Canonical(want, werr), catalog.Canonical(got, gerr)
	if !bytes.Equal(w, g) {
		at := firstDiff(w, g)
		t.Fatalf("%s: cuda differs from ref at byte %d of %d/%d", what, at, len(w), len(g))
	}
}

// firstDiff names the first differing byte of two buffers, for messages.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// randomBF16Rows is n rows of w bytes of finite bf16, drawn tile by tile
// (tile values each): every tile is one of a wide exponent spread, tiny
// values (bf16 subnormals: fp32/bf16 subnormal scales), values near 1 with
// e4m3 ties, the extremes of bf16, or all ±0 (about one tile in eight), so
// no buffer is all zero.
func randomBF16Rows(r *rand.Rand, w, n, tile int) spec.Rows {
	x := ref.NewRows(w, n)
	for off := 0; off < len(x.B); off += 2 * tile {
		kind := r.IntN(8)
		for j := 0; j < tile && off+2*j < len(x.B); j++ {
			var h uint16
			switch kind {
			case 0:
				h = 0 // an all-±0 tile
			case 1:
				h = uint16(r.IntN(0x100))
			case 2:
				h = 0x3F00 + uint16(r.IntN(0x100))
			case 3:
				h = 0x7F00 + uint16(r.IntN(0x80))
			default:
				h = uint16(0x2000 + r.IntN(0x3F00))
			}
			h |= uint16(r.IntN(2)) << 15
			binary.LittleEndian.PutUint16(x.B[off+2*j:], h)
		}
	}
	return x
}

var scaleModes = []spec.ScaleMode{"", spec.ScaleDivFP32, spec.ScaleRecipFP32, spec.ScaleDivBF16}

// TestFP8QuantizeRowFromOneRowToPayload compares the CUDA twin with ref on
// fresh random rows, one row to payload scale (128K rows = 144 MiB of
// bf16), in every scale mode; the equiv suite covers the generated cases.
func TestFP8QuantizeRowFromOneRowToPayload(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(len(t.Name())), 72))
	sizes := []int{1, 2, 3, 31, 257, 4099}
	if !testing.Short() {
		sizes = append(sizes, 128<<10)
	}
	for _, n := range sizes {
		x := randomBF16Rows(r, spec.MLABF16RowBytes, n, spec.FP8TileDim)
		for _, m := range scaleModes {
			if n > 1<<14 && m != spec.ScaleDivFP32 {
				continue // ref is slow at payload scale: one mode is enough there
			}
			in := spec.FP8QuantizeRowInput{Mode: m, X: x}
			want, werr := ref.FP8QuantizeRow(spec.DefaultLimits(), in)
			got, gerr := cuda.FP8QuantizeRow(spec.DefaultLimits(), in)
			if werr == nil && gerr == nil && !bytes.Equal(want.Rows.B, got.Rows.B) {
				i := firstDiff(want.Rows.B, got.Rows.B)
				t.Fatalf("n=%d mode=%q: row %d byte %d: ref %#02x, cuda %#02x", n, m, i/spec.FP8RowBytes, i%spec.FP8RowBytes, want.Rows.B[i], got.Rows.B[i])
			}
			sameResultAsRef(t, "quantize_row", want, werr, got, gerr)
		}
	}
}

// e4m3Boundaries are bf16 values at and beside the e4m3 rounding
// boundaries of a tile whose scale is 1 (amax = 448): the normal
// midpoints (1.0625 = 0x3F88 between 1 and 1.125, 0x3F98 between 1.125
// and 1.25, 2.125 = 0x4008, 240+8 = 0x4378, 416+16 = 0x43D8), one bf16 ulp
// either side, the subnormal midpoints (2k+1)·2^-10 (0x3A80, 0x3B40,
// 0x3BA0, 0x3BE0), the smallest normal 2^-6 = 0x3C80, values under half
// the smallest subnormal (0x3A00, 0x0001), 464 is out of a scale-1 tile.
var e4m3Boundaries = []uint16{
	0x43E0, // 448 = amax: s = 1
	0x3F88, 0x3F87, 0x3F89, 0x3F98, 0x3F97, 0x3F99, 0x4008, 0x4007, 0x4009,
	0x4378, 0x4377, 0x4379, 0x43D8, 0x43D7, 0x43D9,
	0x3A80, 0x3A7F, 0x3A81, 0x3B40, 0x3B3F, 0x3B41, 0x3BA0, 0x3BE0, 0x3C80, 0x3C7F,
	0x3A00, 0x0001, 0x8000, 0x0000,
}

// TestFP8QuantizeRowRoundingBoundaries: values at the e4m3 rounding
// boundaries (ties to even), ±0 in a non-zero tile (−0 keeps its sign:
// 0x80), an all-±0 tile (scale 0, codes 0x00, −0 included), equal ref in
// every mode, and the ties land where §0.4 says.
func TestFP8QuantizeRowRoundingBoundaries(t *testing.T) {
	x := ref.NewRows(spec.MLABF16RowBytes, 1)
	row := x.Row(0)
	for j, h := range e4m3Boundaries {
		binary.LittleEndian.PutUint16(row[2*j:], h)
		binary.LittleEndian.PutUint16(row[2*(spec.FP8TileDim+j):], h|0x8000) // tile 1: negated
	}
	for j := range spec.FP8TileDim { // tile 2: all −0 (amax 0); tile 3 stays +0
		binary.LittleEndian.PutUint16(row[2*(2*spec.FP8TileDim+j):], 0x8000)
	}
	binary.LittleEndian.PutUint16(row[2*spec.MLANopeDim:], 0x8000) // rope −0, verbatim
	for _, m := range scaleModes {
		in := spec.FP8QuantizeRowInput{Mode: m, X: x}
		want, werr := ref.FP8QuantizeRow(spec.DefaultLimits(), in)
		got, gerr := cuda.FP8QuantizeRow(spec.DefaultLimits(), in)
		sameResultAsRef(t, string(m), want, werr, got, gerr)
	}
	got, err := cuda.FP8QuantizeRow(spec.DefaultLimits(), spec.FP8QuantizeRowInput{X: x})
	if err != nil {
		t.Fatal(err)
	}
	q := got.Rows.Row(0)
	// 1.0625 ties to 1.0 (0x38, even), 1.1875 ties to 1.25 (0x3A), 2.125
	// to 2.0 (0x40), 248 to 256 (0x78, even mantissa), 432 to 448 (0x7E);
	// 2^-10 ties to 0, 3·2^-10 to 2·2^-9 (0x02); −0 → 0x80.
	for j, c := range map[int]byte{1: 0x38, 4: 0x3A, 7: 0x40, 10: 0x78, 13: 0x7E, 16: 0x00, 19: 0x02, 28: 0x80, 29: 0x00} {
		if q[j] != c {
			t.Errorf("code %d (bf16 %#04x) = %#02x, want %#02x", j, e4m3Boundaries[j], q[j], c)
		}
		if n := q[spec.FP8TileDim+j]; n != c|0x80 {
			t.Errorf("negated code %d = %#02x, want %#02x", j, n, c|0x80)
		}
	}
	for j := 2 * spec.FP8TileDim; j < spec.MLANopeDim; j++ {
		if q[j] != 0 {
			t.Fatalf("all-zero tile code %d = %#02x, want 0x00", j, q[j])
		}
	}
	if s := binary.LittleEndian.Uint32(q[spec.FP8ScaleOff+8:]); s != 0 {
		t.Fatalf("all-(−0) tile scale bits %#08x, want 0", s)
	}
}

// TestFP8QuantizeRowNonFiniteIsRefsError: a NaN or ±Inf found on the
// device is reported as ref reports the first offending value (the first
// bad row wins whatever the thread order).
func TestFP8QuantizeRowNonFiniteIsRefsError(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := randomBF16Rows(r, spec.MLABF16RowBytes, 1000, spec.FP8TileDim)
	binary.LittleEndian.PutUint16(x.Row(700)[2*3:], 0x7FC0)
	binary.LittleEndian.PutUint16(x.Row(513)[2*(spec.MLANopeDim+63):], 0xFF80) // rope, last value
	binary.LittleEndian.PutUint16(x.Row(513)[2*400:], 0x7F80)                  // nope, reported first
	in := spec.FP8QuantizeRowInput{Mode: spec.ScaleRecipFP32, X: x}
	want, werr := ref.FP8QuantizeRow(spec.DefaultLimits(), in)
	got, gerr := cuda.FP8QuantizeRow(spec.DefaultLimits(), in)
	if werr == nil {
		t.Fatal("ref accepted a NaN")
	}
	sameResultAsRef(t, "non-finite", want, werr, got, gerr)
}

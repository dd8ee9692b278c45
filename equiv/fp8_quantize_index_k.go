package equiv

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// fp8Modes are §7.2's scale modes, "" (the default) included.
var fp8Modes = []spec.ScaleMode{"", spec.ScaleDivFP32, spec.ScaleRecipFP32, spec.ScaleDivBF16}

// bf16Fill fills vals (bf16 bits) as one tile of kind: 0 all zero (signs
// mixed), 1 tiny (bf16 subnormals and the smallest normals, so the scale
// is an fp32 or bf16 subnormal or even rounds to zero), 2 any finite bf16,
// 3 magnitudes around 1 with ties (vector A7's values among them), 4 a few
// zeros among moderate values.
func bf16Fill(vals []uint16, kind int, r *rand.Rand) {
	for j := range vals {
		sign := uint16(r.IntN(2)) << 15
		var h uint16
		switch kind {
		case 0:
		case 1:
			h = uint16(r.IntN(0x200))
		case 2:
			h = uint16(r.Uint32()) & 0x7FFF
			if h >= 0x7F80 {
				h -= 0x80
			}
		case 3:
			h = []uint16{0x3F44, 0x3EAF, 0x3F81, 0x3F80, 0x3E9A}[r.IntN(5)]
			if r.IntN(2) == 0 {
				h = 0x3E00 + uint16(r.IntN(0x180))
			}
		default:
			if r.IntN(4) != 0 {
				h = 0x3800 + uint16(r.IntN(0xA00))
			}
		}
		vals[j] = h | sign
	}
}

// fp8Rows draws n rows of w bytes of finite bf16, tile by tile (tiles of
// tile values), each tile's kind drawn from rapid and its values from a
// drawn seed.
func fp8Rows(t *rapid.T, w, tile int) spec.Rows {
	n := rapid.IntRange(0, 3).Draw(t, "rows")
	seed := rapid.Uint64().Draw(t, "seed")
	r := rand.New(rand.NewPCG(seed, 1))
	x := ref.NewRows(w, n)
	vals := make([]uint16, tile)
	for off := 0; off < len(x.B); off += 2 * tile {
		k := min(tile, (len(x.B)-off)/2)
		bf16Fill(vals[:k], rapid.IntRange(0, 4).Draw(t, "tile_kind"), r)
		for j := range k {
			binary.LittleEndian.PutUint16(x.B[off+2*j:], vals[j])
		}
	}
	return x
}

// nonFiniteBF16 are NaN and ±Inf patterns, as bf16 bits.
var nonFiniteBF16 = []uint16{0x7FC0, 0xFFC0, 0x7F80, 0xFF80, 0x7F81, 0xFFFF}

// fp8Invalid returns x with one of its width, shape or values broken and
// the sentinel that names it: a width other than want (ErrUnsupportedDims),
// a ragged buffer (ErrRowCount), or one NaN/Inf bf16 (ErrNonFinite).
func fp8Invalid(t *rapid.T, x spec.Rows, want int) (spec.Rows, *spec.Sentinel) {
	switch v := rapid.IntRange(0, 2).Draw(t, "violation"); {
	case v == 0 || x.N() == 0 && v == 2:
		w := rapid.SampledFrom([]int{2, want / 2, want - 2, want + 2, spec.FP8RowBytes, spec.IndexKRowBytes}).Draw(t, "bad_w")
		if w == want {
			w++
		}
		return ref.NewRows(w, rapid.IntRange(1, 2).Draw(t, "bad_rows")), spec.ErrUnsupportedDims
	case v == 1:
		if len(x.B) == 0 {
			return spec.Rows{W: want, B: make([]byte, want-1)}, spec.ErrRowCount
		}
		return raggedRows(t, x), spec.ErrRowCount
	default:
		y := spec.Rows{W: x.W, B: append([]byte(nil), x.B...)}
		j := rapid.IntRange(0, len(y.B)/2-1).Draw(t, "non_finite_at")
		binary.LittleEndian.PutUint16(y.B[2*j:], rapid.SampledFrom(nonFiniteBF16).Draw(t, "non_finite"))
		return y, spec.ErrNonFinite
	}
}

// FP8QuantizeRow is the differential spec of fp8.quantize_row (docs/spec/cp-layout.md §7.2).
func FP8QuantizeRow() *Spec[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput] {
	return &Spec[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput]{
		Op: catalog.FP8QuantizeRow(),
		Valid: rapid.Custom(func(t *rapid.T) spec.FP8QuantizeRowInput {
			m := rapid.SampledFrom(fp8Modes).Draw(t, "mode")
			return spec.FP8QuantizeRowInput{Mode: m, X: fp8Rows(t, spec.MLABF16RowBytes, spec.FP8TileDim)}
		}),
		Invalid: rapid.Custom(func(t *rapid.T) Bad[spec.FP8QuantizeRowInput] {
			m := rapid.SampledFrom(fp8Modes).Draw(t, "mode")
			x := fp8Rows(t, spec.MLABF16RowBytes, spec.FP8TileDim)
			if rapid.IntRange(0, 3).Draw(t, "bad_mode") == 0 {
				bad := rapid.SampledFrom([]spec.ScaleMode{"div", "DIV_FP32", "recip", "bf16", " div_fp32"}).Draw(t, "bad_mode_name")
				return Bad[spec.FP8QuantizeRowInput]{spec.FP8QuantizeRowInput{Mode: bad, X: x}, spec.ErrBadEnum}
			}
			y, want := fp8Invalid(t, x, spec.MLABF16RowBytes)
			return Bad[spec.FP8QuantizeRowInput]{spec.FP8QuantizeRowInput{Mode: m, X: y}, want}
		}),
		Boundary: []Case[spec.FP8QuantizeRowInput]{
			{"no-rows", spec.FP8QuantizeRowInput{X: ref.NewRows(spec.MLABF16RowBytes, 0)}},
			{"zero-row-div_fp32", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivFP32, X: ref.NewRows(spec.MLABF16RowBytes, 1)}},
			{"zero-row-recip_fp32", spec.FP8QuantizeRowInput{Mode: spec.ScaleRecipFP32, X: ref.NewRows(spec.MLABF16RowBytes, 1)}},
			{"zero-row-div_bf16", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivBF16, X: ref.NewRows(spec.MLABF16RowBytes, 1)}},
			{"worked-tile-and-a7", spec.FP8QuantizeRowInput{X: catalog.WorkedFP8Rows()}},
			{"scale-mode-vector-div_fp32", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivFP32, X: fp8Tile(0x3F81, 0x3EAF)}},
			{"scale-mode-vector-div_bf16", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivBF16, X: fp8Tile(0x3F81, 0x3EAF)}},
			{"scale-mode-vector-recip_fp32", spec.FP8QuantizeRowInput{Mode: spec.ScaleRecipFP32, X: fp8Tile(0x3F81, 0x3EAF)}},
			{"max-bf16", spec.FP8QuantizeRowInput{X: fp8Tile(0x7F7F, 0xFF7F, 0x0001)}},
			{"max-bf16-div_bf16", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivBF16, X: fp8Tile(0x7F7F, 0xFF7F, 0x0001)}},
			{"fp32-subnormal-scale", spec.FP8QuantizeRowInput{X: fp8Tile(0x0001, 0x8001, 0)}},
			{"bad-mode", spec.FP8QuantizeRowInput{Mode: "div", X: ref.NewRows(spec.MLABF16RowBytes, 1)}},
			{"bad-width", spec.FP8QuantizeRowInput{X: ref.NewRows(spec.FP8RowBytes, 1)}},
			{"rope-inf", spec.FP8QuantizeRowInput{X: fp8WithAt(spec.MLABF16RowBytes, 2*(spec.MLANopeDim+5), 0xFF80)}},
		},
		Regressions: []Case[spec.FP8QuantizeRowInput]{
			// §7.2 / A7: x/s = 200.0 → 0x74; x·fl32(1/s) = 200.000015 → 0x75.
			{"reciprocal-multiply", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivFP32, X: fp8Tile(0x3F44, 0x3EAF)}},
			// div_bf16, amax 2^-124: bf16RNE(amax/448) is the bf16
			// subnormal 2^-133, so amax/s = 512 must saturate to 0x7E.
			{"no-saturation", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivBF16, X: fp8Tile(0x0180)}},
			// div_bf16, amax 2^-133: the scale rounds to 0, a zero in the
			// tile is 0/0 = NaN, which must encode as 0x7F.
			{"nan-lost", spec.FP8QuantizeRowInput{Mode: spec.ScaleDivBF16, X: fp8Tile(0x0001, 0)}},
		},
		Rejects: map[string]*spec.Sentinel{
			"bad-mode":  spec.ErrBadEnum,
			"bad-width": spec.ErrUnsupportedDims,
			"rope-inf":  spec.ErrNonFinite,
		},
		Props: []Prop[spec.FP8QuantizeRowInput, spec.FP8QuantizeRowOutput]{
			{"shape-rope-verbatim", fp8RowShape},
			{"zero-tile-rule", fp8ZeroTile},
			{"scale-is-the-modes", fp8ScaleRule},
			{"sign-symmetric", fp8SignSymmetric},
			{"dequant-within-half-step", fp8DequantClose},
		},
	}
}

// fp8Tile is one MLA row whose tile 0 starts with vals, the rest zero.
func fp8Tile(vals ...uint16) spec.Rows {
	x := ref.NewRows(spec.MLABF16RowBytes, 1)
	for j, v := range vals {
		binary.LittleEndian.PutUint16(x.B[2*j:], v)
	}
	return x
}

// fp8WithAt is one zero row of width w with the bf16 h at byte off.
func fp8WithAt(w, off int, h uint16) spec.Rows {
	x := ref.NewRows(w, 1)
	binary.LittleEndian.PutUint16(x.B[off:], h)
	return x
}

// bf16At is the bf16 at value index j of row.
func bf16At(row []byte, j int) uint16 { return binary.LittleEndian.Uint16(row[2*j:]) }

// fp8RowShape: one 656-byte row per input row, rope bytes verbatim.
func fp8RowShape(_ spec.Limits, in spec.FP8QuantizeRowInput, out spec.FP8QuantizeRowOutput) error {
	if out.Rows.W != spec.FP8RowBytes || out.Rows.N() != in.X.N() {
		return fmt.Errorf("%d rows of %d B, want %d of %d", out.Rows.N(), out.Rows.W, in.X.N(), spec.FP8RowBytes)
	}
	for i := range in.X.N() {
		if string(out.Rows.Row(i)[spec.FP8RopeOff:]) != string(in.X.Row(i)[2*spec.MLANopeDim:]) {
			return fmt.Errorf("row %d: rope bytes not copied verbatim", i)
		}
	}
	return nil
}

// tileAmax is the largest |x| of tile t of MLA row src, as fp32.
func tileAmax(src []byte, t int) float32 {
	var a uint16
	for j := t * spec.FP8TileDim; j < (t+1)*spec.FP8TileDim; j++ {
		a = max(a, bf16At(src, j)&0x7FFF)
	}
	return ref.F32FromBF16(a)
}

// fp8ZeroTile: a tile whose values are all ±0 has scale 0 and codes 0x00
// in every mode (§7.2 step 2, A8), and only such a tile has scale 0 in the
// fp32 modes.
func fp8ZeroTile(_ spec.Limits, in spec.FP8QuantizeRowInput, out spec.FP8QuantizeRowOutput) error {
	for i := range in.X.N() {
		row := out.Rows.Row(i)
		for t := range spec.FP8Tiles {
			s := binary.LittleEndian.Uint32(row[spec.FP8ScaleOff+4*t:])
			zero := tileAmax(in.X.Row(i), t) == 0
			if zero {
				for _, c := range row[t*spec.FP8TileDim : (t+1)*spec.FP8TileDim] {
					if c != 0 || s != 0 {
						return fmt.Errorf("row %d tile %d: all-zero tile gives scale %#x, code %#x", i, t, s, c)
					}
				}
			} else if s == 0 && in.Mode != spec.ScaleDivBF16 {
				return fmt.Errorf("row %d tile %d: non-zero tile with scale 0 in mode %q", i, t, in.Mode)
			}
		}
	}
	return nil
}

// fp8ScaleRule: every non-zero tile's scale is its mode's (§7.2 table),
// and where the scale is a normal fp32 the tile's largest value encodes to
// ±448 (0x7E/0xFE): saturating, never a NaN code.
func fp8ScaleRule(_ spec.Limits, in spec.FP8QuantizeRowInput, out spec.FP8QuantizeRowOutput) error {
	m, _ := ref.CheckScaleMode("mode", in.Mode)
	for i := range in.X.N() {
		src, row := in.X.Row(i), out.Rows.Row(i)
		for t := range spec.FP8Tiles {
			amax := tileAmax(src, t)
			if amax == 0 {
				continue
			}
			s := math.Float32frombits(binary.LittleEndian.Uint32(row[spec.FP8ScaleOff+4*t:]))
			if want := ref.FP8TileScale(amax, m); math.Float32bits(s) != math.Float32bits(want) {
				return fmt.Errorf("row %d tile %d: scale %#x, want %#x (%s)", i, t, math.Float32bits(s), math.Float32bits(want), m)
			}
			if s < 0x1p-126 || (m == spec.ScaleRecipFP32 && s < 0x1p-125) {
				continue
			}
			for j := t * spec.FP8TileDim; j < (t+1)*spec.FP8TileDim; j++ {
				if uint32(bf16At(src, j)&0x7FFF) == math.Float32bits(amax)>>16 && row[j]&0x7F != spec.E4M3Max {
					return fmt.Errorf("row %d value %d (the tile amax) has code %#x, want ±448", i, j, row[j])
				}
			}
		}
	}
	return nil
}

// fp8SignSymmetric: negating every k_nope value flips bit 7 of every code
// and leaves the scales alone (fl32(−x/s) = −fl32(x/s); enc is odd).
func fp8SignSymmetric(lim spec.Limits, in spec.FP8QuantizeRowInput, out spec.FP8QuantizeRowOutput) error {
	neg := spec.Rows{W: in.X.W, B: append([]byte(nil), in.X.B...)}
	for i := range neg.N() {
		for j := range spec.MLANopeDim {
			neg.Row(i)[2*j+1] ^= 0x80
		}
	}
	got, err := ref.FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{Mode: in.Mode, X: neg})
	if err != nil {
		return err
	}
	for i := range in.X.N() {
		a, b := out.Rows.Row(i), got.Rows.Row(i)
		for j := range spec.MLANopeDim {
			if tileAmax(in.X.Row(i), j/spec.FP8TileDim) == 0 {
				continue // the zero-tile rule: codes 0x00 whatever the signs
			}
			if a[j] != b[j]^0x80 && !(a[j]&0x7F == 0x7F && b[j] == a[j]) {
				return fmt.Errorf("row %d code %d: %#x, negated input gives %#x", i, j, a[j], b[j])
			}
		}
		if string(a[spec.FP8ScaleOff:]) != string(b[spec.FP8ScaleOff:]) {
			return fmt.Errorf("row %d: negation changed the scales", i)
		}
	}
	return nil
}

// fp8DequantClose: where the tile's scale is a normal fp32, dequantizing
// (§7.2, DequantRow656) gives every value back to within half an e4m3
// step of x/s (relative 2^-4, or 2^-10·s absolute in the subnormal
// codes) plus the bf16 rounding of the result; at the top binade the
// result may overflow to ±Inf instead (a div_bf16 scale rounded up).
func fp8DequantClose(_ spec.Limits, in spec.FP8QuantizeRowInput, out spec.FP8QuantizeRowOutput) error {
	for i := range in.X.N() {
		d := ref.DequantRow656([spec.FP8RowBytes]byte(out.Rows.Row(i)))
		src := in.X.Row(i)
		for j := range spec.MLANopeDim {
			t := j / spec.FP8TileDim
			s := float64(math.Float32frombits(binary.LittleEndian.Uint32(out.Rows.Row(i)[spec.FP8ScaleOff+4*t:])))
			if s < 0x1p-120 {
				continue
			}
			x, y := float64(ref.F32FromBF16(bf16At(src, j))), float64(ref.F32FromBF16(d[j]))
			if math.IsInf(y, 0) && math.Abs(x) >= 0x1p127 {
				continue // near the bf16 maximum, 448·s may round to ±Inf (div_bf16 rounds s up)
			}
			if tol := math.Abs(x)*(0x1p-4+0x1p-7) + s*0x1p-9; math.Abs(x-y) > tol {
				return fmt.Errorf("row %d value %d: %g dequantizes to %g (scale %g)", i, j, x, y, s)
			}
		}
	}
	return nil
}

// FP8QuantizeIndexK is the differential spec of fp8.quantize_index_k (docs/spec/cp-layout.md §7.3).
func FP8QuantizeIndexK() *Spec[spec.FP8QuantizeIndexKInput, spec.FP8QuantizeIndexKOutput] {
	key := func(vals ...uint16) spec.Rows {
		x := ref.NewRows(spec.IndexKBF16RowBytes, 1)
		for j, v := range vals {
			binary.LittleEndian.PutUint16(x.B[2*j:], v)
		}
		return x
	}
	return &Spec[spec.FP8QuantizeIndexKInput, spec.FP8QuantizeIndexKOutput]{
		Op: catalog.FP8QuantizeIndexK(),
		Valid: rapid.Custom(func(t *rapid.T) spec.FP8QuantizeIndexKInput {
			return spec.FP8QuantizeIndexKInput{X: fp8Rows(t, spec.IndexKBF16RowBytes, spec.IndexKDim)}
		}),
		Invalid: rapid.Custom(func(t *rapid.T) Bad[spec.FP8QuantizeIndexKInput] {
			y, want := fp8Invalid(t, fp8Rows(t, spec.IndexKBF16RowBytes, spec.IndexKDim), spec.IndexKBF16RowBytes)
			return Bad[spec.FP8QuantizeIndexKInput]{spec.FP8QuantizeIndexKInput{X: y}, want}
		}),
		Boundary: []Case[spec.FP8QuantizeIndexKInput]{
			{"no-rows", spec.FP8QuantizeIndexKInput{X: ref.NewRows(spec.IndexKBF16RowBytes, 0)}},
			{"worked-keys", spec.FP8QuantizeIndexKInput{X: catalog.WorkedIndexKRows()}},
			{"max-bf16", spec.FP8QuantizeIndexKInput{X: key(0x7F7F, 0x0001, 0xFF7F)}},
			{"below-floor", spec.FP8QuantizeIndexKInput{X: key(0x38D1, 0x0001, 0x8000)}},
			{"bad-width", spec.FP8QuantizeIndexKInput{X: ref.NewRows(spec.IndexKRowBytes, 1)}},
			{"nan", spec.FP8QuantizeIndexKInput{X: key(0, 0, 0x7FC0)}},
		},
		Rejects: map[string]*spec.Sentinel{"bad-width": spec.ErrUnsupportedDims, "nan": spec.ErrNonFinite},
		Props: []Prop[spec.FP8QuantizeIndexKInput, spec.FP8QuantizeIndexKOutput]{
			{"ue8m0-scale-and-codes", indexKScaleRule},
		},
	}
}

// indexKScaleRule: one 132-byte row per key; the scale is a power of two
// with amax/s in (0, 448] (so the largest value is at most ±448, never a
// NaN code), and a power of two at least the 1e-4 floor's.
func indexKScaleRule(_ spec.Limits, in spec.FP8QuantizeIndexKInput, out spec.FP8QuantizeIndexKOutput) error {
	if out.Rows.W != spec.IndexKRowBytes || out.Rows.N() != in.X.N() {
		return fmt.Errorf("%d rows of %d B, want %d of %d", out.Rows.N(), out.Rows.W, in.X.N(), spec.IndexKRowBytes)
	}
	for i := range in.X.N() {
		row := out.Rows.Row(i)
		u := binary.LittleEndian.Uint32(row[spec.IndexKDim:])
		if u&0x807FFFFF != 0 || u < 0x34800000 {
			return fmt.Errorf("key %d: scale %#x is not a power of two >= 2^-22", i, u)
		}
		s := math.Float32frombits(u)
		var a uint16
		for j := range spec.IndexKDim {
			a = max(a, bf16At(in.X.Row(i), j)&0x7FFF)
			if row[j]&0x7F == 0x7F {
				return fmt.Errorf("key %d code %d is NaN", i, j)
			}
		}
		if q := ref.F32FromBF16(a) / s; q > 448 {
			return fmt.Errorf("key %d: amax/s = %g > 448", i, q)
		}
	}
	return nil
}

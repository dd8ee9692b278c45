package ref_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func bf(x float32) uint16 { return ref.BF16FromF32(x) }

func scaleOf(row [spec.FP8RowBytes]byte, t int) uint32 {
	return binary.LittleEndian.Uint32(row[spec.FP8ScaleOff+4*t:])
}

// The worked tile of §7.2, its dequantization, and the zero tiles.
func TestQuantizeRow656WorkedTile(t *testing.T) {
	var nope [spec.MLANopeDim]uint16
	var rope [spec.MLARopeDim]uint16
	for j, v := range []float32{1.0, -2.0, 0.5, 0.3} {
		nope[j] = bf(v)
	}
	rope[0], rope[63] = 0x1234, 0xBEEF
	row, err := ref.QuantizeRow656(nope, rope, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := scaleOf(row, 0); got != 0x3B924925 {
		t.Errorf("scale = %#x, want 0x3B924925", got)
	}
	if b := row[spec.FP8ScaleOff : spec.FP8ScaleOff+4]; b[0] != 0x25 || b[1] != 0x49 || b[2] != 0x92 || b[3] != 0x3B {
		t.Errorf("scale bytes % x", b)
	}
	for j, want := range []uint8{0x76, 0xFE, 0x6E, 0x68, 0x00} {
		if row[j] != want {
			t.Errorf("code[%d] = %#x, want %#x", j, row[j], want)
		}
	}
	for tt := 1; tt < spec.FP8Tiles; tt++ {
		if scaleOf(row, tt) != 0 {
			t.Errorf("zero tile %d scale %#x", tt, scaleOf(row, tt))
		}
		for j := tt * 128; j < (tt+1)*128; j++ {
			if row[j] != 0 {
				t.Fatalf("zero tile code[%d] = %#x", j, row[j])
			}
		}
	}
	if binary.LittleEndian.Uint16(row[spec.FP8RopeOff:]) != 0x1234 || binary.LittleEndian.Uint16(row[spec.FP8RowBytes-2:]) != 0xBEEF {
		t.Error("rope not copied verbatim")
	}
	d := ref.DequantRow656(row)
	for j, want := range []uint16{0x3F80, 0xC000, 0x3F00, 0x3E92} {
		if d[j] != want {
			t.Errorf("dequant[%d] = %#x, want %#x", j, d[j], want)
		}
	}
	if d[512] != 0x1234 || d[575] != 0xBEEF {
		t.Error("dequant rope")
	}
	row[5] = 0x7F
	if d := ref.DequantRow656(row); d[5] != 0x7FC0 {
		t.Errorf("NaN code dequant = %#x", d[5])
	}
}

// Vector A7 (division vs reciprocal) and the scale-mode vector of §7.2.
func TestQuantizeRow656Modes(t *testing.T) {
	var nope [spec.MLANopeDim]uint16
	var rope [spec.MLARopeDim]uint16
	nope[0], nope[1] = 0x3F44, 0x3EAF // A7: amax 0.765625, x 0.341796875
	for _, c := range []struct {
		m    spec.ScaleMode
		code uint8
	}{{spec.ScaleDivFP32, 0x74}, {"", 0x74}, {spec.ScaleRecipFP32, 0x75}} {
		row, err := ref.QuantizeRow656(nope, rope, c.m)
		if err != nil {
			t.Fatal(err)
		}
		if scaleOf(row, 0) != 0x3AE00000 || row[1] != c.code {
			t.Errorf("A7 %q: s %#x code %#x, want 0x3AE00000 %#x", c.m, scaleOf(row, 0), row[1], c.code)
		}
	}
	nope[0], nope[1] = 0x3F81, 0x3EAF
	for _, c := range []struct {
		m     spec.ScaleMode
		scale uint32
		code  uint8
	}{{spec.ScaleDivFP32, 0x3B136DB7, 0x71}, {spec.ScaleDivBF16, 0x3B130000, 0x72}} {
		row, err := ref.QuantizeRow656(nope, rope, c.m)
		if err != nil {
			t.Fatal(err)
		}
		if scaleOf(row, 0) != c.scale || row[1] != c.code {
			t.Errorf("%q: s %#x code %#x, want %#x %#x", c.m, scaleOf(row, 0), row[1], c.scale, c.code)
		}
	}
	var zero [spec.MLANopeDim]uint16
	for _, m := range []spec.ScaleMode{spec.ScaleDivFP32, spec.ScaleRecipFP32, spec.ScaleDivBF16} {
		row, _ := ref.QuantizeRow656(zero, rope, m)
		for _, b := range row[:spec.FP8RopeOff] {
			if b != 0 {
				t.Fatalf("zero row in %q not all zero", m)
			}
		}
	}
}

func TestQuantizeRow656Bad(t *testing.T) {
	var nope [spec.MLANopeDim]uint16
	var rope [spec.MLARopeDim]uint16
	rope[3] = 0x7F80
	_, err := ref.QuantizeRow656(nope, rope, "")
	var ie *spec.InputError
	if !errors.As(err, &ie) || !errors.Is(err, spec.ErrNonFinite) || ie.Field != "rope[3]" {
		t.Errorf("rope Inf: %v", err)
	}
	nope[7] = 0xFFC1
	if _, err := ref.QuantizeRow656(nope, rope, ""); !errors.As(err, &ie) || ie.Field != "nope[7]" {
		t.Errorf("nope NaN: %v", err)
	}
	if _, err := ref.QuantizeRow656(nope, rope, "fast"); !errors.Is(err, spec.ErrBadEnum) {
		t.Errorf("bad mode: %v", err)
	}
}

func TestFP8QuantizeRowOpBad(t *testing.T) {
	lim := spec.DefaultLimits()
	cases := []struct {
		name  string
		in    spec.FP8QuantizeRowInput
		want  *spec.Sentinel
		field string
	}{
		{"mode", spec.FP8QuantizeRowInput{Mode: "x", X: ref.NewRows(spec.MLABF16RowBytes, 1)}, spec.ErrBadEnum, "mode"},
		{"ragged", spec.FP8QuantizeRowInput{X: spec.Rows{W: 1152, B: make([]byte, 1153)}}, spec.ErrRowCount, "x.b"},
		{"width", spec.FP8QuantizeRowInput{X: ref.NewRows(656, 1)}, spec.ErrUnsupportedDims, "x.w"},
		{"nan", spec.FP8QuantizeRowInput{X: spec.Rows{W: 1152, B: func() []byte {
			b := make([]byte, 2*1152)
			binary.LittleEndian.PutUint16(b[1152+2*520:], 0x7FC0)
			return b
		}()}}, spec.ErrNonFinite, "x[1].rope[8]"},
	}
	for _, c := range cases {
		_, err := ref.FP8QuantizeRow(lim, c.in)
		var ie *spec.InputError
		if !errors.As(err, &ie) || ie.Err != c.want || ie.Field != c.field {
			t.Errorf("%s: %v, want %s at %s", c.name, err, c.want.Code(), c.field)
		}
	}
}

// The worked keys of §7.3.
func TestQuantizeIndexK(t *testing.T) {
	for _, c := range []struct {
		x     []float32
		scale uint32
		codes []uint8
	}{
		{[]float32{1.0, -0.5}, 0x3B800000, []uint8{0x78, 0xF0}},
		{[]float32{3.0, 0.75}, 0x3C000000, []uint8{0x7C, 0x6C}},
		{nil, 0x34800000, []uint8{0, 0}},
	} {
		var k [spec.IndexKDim]uint16
		for j, v := range c.x {
			k[j] = bf(v)
		}
		row, err := ref.QuantizeIndexK(k)
		if err != nil {
			t.Fatal(err)
		}
		if s := binary.LittleEndian.Uint32(row[128:]); s != c.scale {
			t.Errorf("%v: scale %#x want %#x", c.x, s, c.scale)
		}
		for j, want := range c.codes {
			if row[j] != want {
				t.Errorf("%v: code[%d] %#x want %#x", c.x, j, row[j], want)
			}
		}
		for _, b := range row[2:128] {
			if b != 0 {
				t.Fatalf("%v: nonzero trailing code", c.x)
			}
		}
	}
	var k [spec.IndexKDim]uint16
	k[9] = bf(float32(math.Inf(-1)))
	var ie *spec.InputError
	if _, err := ref.QuantizeIndexK(k); !errors.As(err, &ie) || ie.Err != spec.ErrNonFinite || ie.Field != "k[9]" {
		t.Errorf("Inf key: %v", err)
	}
	_, err := ref.FP8QuantizeIndexK(spec.DefaultLimits(), spec.FP8QuantizeIndexKInput{X: ref.NewRows(128, 1)})
	if !errors.Is(err, spec.ErrUnsupportedDims) {
		t.Errorf("width: %v", err)
	}
}

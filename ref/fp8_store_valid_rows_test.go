package ref_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// mlaRow is a 1152-byte MLA row: k_nope all nope, k_rope all rope.
func mlaRow(nope, rope uint16) []byte {
	b := make([]byte, spec.MLABF16RowBytes)
	for j := range spec.MLANopeDim + spec.MLARopeDim {
		v := nope
		if j >= spec.MLANopeDim {
			v = rope
		}
		binary.LittleEndian.PutUint16(b[2*j:], v)
	}
	return b
}

func quant656(t *testing.T, row []byte) []byte {
	t.Helper()
	q, err := ref.FP8QuantizeRow(spec.DefaultLimits(), spec.FP8QuantizeRowInput{X: spec.Rows{W: spec.MLABF16RowBytes, B: row}})
	if err != nil {
		t.Fatal(err)
	}
	return q.Rows.B
}

// storeValidMinimal is §2.5's padded cp=2, g=1, L=[3,4]: rank 0 holds
// a0 b0 | PAD b3; the PAD row is NaN, which quantize would reject.
func storeValidMinimal() spec.FP8StoreValidRowsInput {
	x := spec.Rows{W: spec.MLABF16RowBytes}
	x.B = append(x.B, mlaRow(0x3F80, 0x0001)...) // a0: 1.0
	x.B = append(x.B, mlaRow(0x4000, 0x0002)...) // b0: 2.0
	x.B = append(x.B, bytes.Repeat([]byte{0xFF}, spec.MLABF16RowBytes)...)
	x.B = append(x.B, mlaRow(0x3F00, 0x0003)...) // b3: 0.5
	return spec.FP8StoreValidRowsInput{
		Pool:       spec.FP8Pool{PageSize: 2, Size: 10, Rows: fp8TestRows(12, 0)},
		Layout:     spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1},
		Rank:       0,
		X:          x,
		ReqToToken: [][]int64{{2, 3, 4, 5, 6}, {8, 9, 10, 11}},
		PrefixLens: []int{2, 0},
	}
}

// TestFP8StoreValidRowsMinimal: a0 goes to req_to_token[0][P_0 + 0] = 4,
// b0 to req_to_token[1][0] = 8, b3 to req_to_token[1][3] = 11; the PAD row
// reaches no slot, and every other slot keeps its bytes.
func TestFP8StoreValidRowsMinimal(t *testing.T) {
	in := storeValidMinimal()
	out, err := ref.FP8StoreValidRows(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]byte{4: quant656(t, in.X.Row(0)), 8: quant656(t, in.X.Row(1)), 11: quant656(t, in.X.Row(3))}
	for s := range out.Pool.Rows.N() {
		w, ok := want[s]
		if !ok {
			w = in.Pool.Rows.Row(s)
		}
		if !bytes.Equal(out.Pool.Rows.Row(s), w) {
			t.Errorf("slot %d: wrong bytes (stored: %v)", s, ok)
		}
	}
	if got := out.Pool.Rows.Row(4)[0]; got != 0x7E {
		t.Errorf("a0 code[0] = %#x, want 0x7E (1.0 / fl32(1/448))", got)
	}
	if in.Pool.Rows.Row(4)[0] != 4 {
		t.Error("store_valid_rows mutated its input pool")
	}
}

// TestFP8StoreValidRowsBadInput is the bad-input table (docs/spec/cp-layout.md §7.4,
// §2.4): sentinel and field of the first violation.
func TestFP8StoreValidRowsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*spec.FP8StoreValidRowsInput)
		want  *spec.Sentinel
		field string
	}{
		{"rank-cp", func(in *spec.FP8StoreValidRowsInput) { in.Rank = 2 }, spec.ErrRank, "rank"},
		{"valid-rows-only", func(in *spec.FP8StoreValidRowsInput) {
			in.X = spec.Rows{W: in.X.W, B: append(append([]byte{}, in.X.B[:2*in.X.W]...), in.X.Row(3)...)}
		}, spec.ErrRowContract, "x"},
		{"fp8-width", func(in *spec.FP8StoreValidRowsInput) { in.X = ref.NewRows(spec.FP8RowBytes, 4) }, spec.ErrUnsupportedDims, "x.w"},
		{"missing-list", func(in *spec.FP8StoreValidRowsInput) { in.ReqToToken = in.ReqToToken[:1] }, spec.ErrLengthMismatch, "req_to_token"},
		{"missing-prefix", func(in *spec.FP8StoreValidRowsInput) { in.PrefixLens = in.PrefixLens[:1] }, spec.ErrLengthMismatch, "prefix_lens"},
		{"negative-prefix", func(in *spec.FP8StoreValidRowsInput) { in.PrefixLens = []int{2, -1} }, spec.ErrNegative, "prefix_lens[1]"},
		{"list-short", func(in *spec.FP8StoreValidRowsInput) { in.PrefixLens = []int{3, 0} }, spec.ErrLengthMismatch, "req_to_token[0]"},
		{"slot-num-slots", func(in *spec.FP8StoreValidRowsInput) { in.ReqToToken = [][]int64{{2, 3, 4, 5, 6}, {8, 9, 10, 12}} }, spec.ErrSlotOutOfRange, "req_to_token[1][3]"},
		{"duplicate", func(in *spec.FP8StoreValidRowsInput) { in.ReqToToken = [][]int64{{2, 3, 8, 5, 6}, {8, 9, 10, 11}} }, spec.ErrDuplicateSlot, "req_to_token[1][0]"},
		{"non-finite-valid-row", func(in *spec.FP8StoreValidRowsInput) {
			in.X = spec.Rows{W: in.X.W, B: bytes.Clone(in.X.B)}
			binary.LittleEndian.PutUint16(in.X.Row(3)[2*spec.MLANopeDim:], 0x7F80)
		}, spec.ErrNonFinite, "x[3].rope[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := storeValidMinimal()
			tc.edit(&in)
			_, err := ref.FP8StoreValidRows(spec.DefaultLimits(), in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if ie, ok := spec.AsInputError(err); !ok || ie.Field != tc.field {
				t.Errorf("field of %v, want %q", err, tc.field)
			}
		})
	}
}

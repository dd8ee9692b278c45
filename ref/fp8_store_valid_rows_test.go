package ref_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
)

// mlaRow is a 1152-byte MLA row: k_nope all nope, k_rope all rope.
func mlaRow(nope, rope uint16) []byte {
	b := make([]byte, ref.MLABF16RowBytes)
	for j := range ref.MLANopeDim + ref.MLARopeDim {
		v := nope
		if j >= ref.MLANopeDim {
			v = rope
		}
		binary.LittleEndian.PutUint16(b[2*j:], v)
	}
	return b
}

func quant656(t *testing.T, row []byte) []byte {
	t.Helper()
	q, err := ref.FP8QuantizeRow(ref.DefaultLimits(), ref.FP8QuantizeRowInput{X: ref.Rows{W: ref.MLABF16RowBytes, B: row}})
	if err != nil {
		t.Fatal(err)
	}
	return q.Rows.B
}

// storeValidMinimal is §2.5's padded cp=2, g=1, L=[3,4]: rank 0 holds
// a0 b0 | PAD b3; the PAD row is NaN, which quantize would reject.
func storeValidMinimal() ref.FP8StoreValidRowsInput {
	x := ref.Rows{W: ref.MLABF16RowBytes}
	x.B = append(x.B, mlaRow(0x3F80, 0x0001)...) // a0: 1.0
	x.B = append(x.B, mlaRow(0x4000, 0x0002)...) // b0: 2.0
	x.B = append(x.B, bytes.Repeat([]byte{0xFF}, ref.MLABF16RowBytes)...)
	x.B = append(x.B, mlaRow(0x3F00, 0x0003)...) // b3: 0.5
	return ref.FP8StoreValidRowsInput{
		Pool:       ref.FP8Pool{PageSize: 2, Size: 10, Rows: fp8TestRows(12, 0)},
		Layout:     ref.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1},
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
	out, err := ref.FP8StoreValidRows(ref.DefaultLimits(), in)
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
		edit  func(*ref.FP8StoreValidRowsInput)
		want  *ref.Sentinel
		field string
	}{
		{"rank-cp", func(in *ref.FP8StoreValidRowsInput) { in.Rank = 2 }, ref.ErrRank, "rank"},
		{"valid-rows-only", func(in *ref.FP8StoreValidRowsInput) {
			in.X = ref.Rows{W: in.X.W, B: append(append([]byte{}, in.X.B[:2*in.X.W]...), in.X.Row(3)...)}
		}, ref.ErrRowContract, "x"},
		{"fp8-width", func(in *ref.FP8StoreValidRowsInput) { in.X = ref.NewRows(ref.FP8RowBytes, 4) }, ref.ErrUnsupportedDims, "x.w"},
		{"missing-list", func(in *ref.FP8StoreValidRowsInput) { in.ReqToToken = in.ReqToToken[:1] }, ref.ErrLengthMismatch, "req_to_token"},
		{"missing-prefix", func(in *ref.FP8StoreValidRowsInput) { in.PrefixLens = in.PrefixLens[:1] }, ref.ErrLengthMismatch, "prefix_lens"},
		{"negative-prefix", func(in *ref.FP8StoreValidRowsInput) { in.PrefixLens = []int{2, -1} }, ref.ErrNegative, "prefix_lens[1]"},
		{"list-short", func(in *ref.FP8StoreValidRowsInput) { in.PrefixLens = []int{3, 0} }, ref.ErrLengthMismatch, "req_to_token[0]"},
		{"slot-num-slots", func(in *ref.FP8StoreValidRowsInput) { in.ReqToToken = [][]int64{{2, 3, 4, 5, 6}, {8, 9, 10, 12}} }, ref.ErrSlotOutOfRange, "req_to_token[1][3]"},
		{"duplicate", func(in *ref.FP8StoreValidRowsInput) { in.ReqToToken = [][]int64{{2, 3, 8, 5, 6}, {8, 9, 10, 11}} }, ref.ErrDuplicateSlot, "req_to_token[1][0]"},
		{"non-finite-valid-row", func(in *ref.FP8StoreValidRowsInput) {
			in.X = ref.Rows{W: in.X.W, B: bytes.Clone(in.X.B)}
			binary.LittleEndian.PutUint16(in.X.Row(3)[2*ref.MLANopeDim:], 0x7F80)
		}, ref.ErrNonFinite, "x[3].rope[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := storeValidMinimal()
			tc.edit(&in)
			_, err := ref.FP8StoreValidRows(ref.DefaultLimits(), in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if ie, ok := ref.AsInputError(err); !ok || ie.Field != tc.field {
				t.Errorf("field of %v, want %q", err, tc.field)
			}
		})
	}
}

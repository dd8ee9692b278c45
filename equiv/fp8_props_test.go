package equiv_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestDequantTopKAttentionCatchesWrongRows: P7.9's sparse attention holds
// on ref's top-k rows and fails when a written row is wrong or a
// referenced row was not written.
func TestDequantTopKAttentionCatchesWrongRows(t *testing.T) {
	props := equiv.FP8DequantTopK().Props
	const name = "sparse-attention-equals-full-dequant-attention"
	kq := ref.NewRows(spec.FP8RowBytes, 4)
	for i := range kq.B {
		kq.B[i] = byte(i*7) & 0x3F
	}
	in := spec.FP8DequantTopKInput{Kq: kq, TopK: [][]int32{{2, 0, -1}, {3, 3}}}
	out, err := ref.FP8DequantTopK(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if err := propHolds(t, props, name, in, out); err != nil {
		t.Fatalf("ref: %v", err)
	}
	bad := out
	bad.Rows = spec.Rows{W: out.Rows.W, B: append([]byte{}, out.Rows.B...)}
	bad.Rows.Row(1)[1] ^= 0x40 // row 2's first k_nope value, weight −1 for query 0
	if propHolds(t, props, name, in, bad) == nil {
		t.Error("a wrong top-k row was not caught")
	}
	short := spec.FP8DequantTopKOutput{RowIDs: out.RowIDs[:2], Rows: spec.Rows{W: out.Rows.W, B: out.Rows.B[:2*out.Rows.W]}}
	if propHolds(t, props, name, in, short) == nil {
		t.Error("an unwritten referenced row was not caught")
	}
}

// TestStoreValidAllRanksCatchesWrongSlot: P7.2 holds on the seed's bs=5
// page-aligned case and fails when the rank's write left one current slot
// wrong (so the property is not skipped on that case).
func TestStoreValidAllRanksCatchesWrongSlot(t *testing.T) {
	sp := equiv.FP8StoreValidRows()
	const name = "all-ranks-materialize-global-valid-rows"
	seen := 0
	for _, c := range sp.Boundary {
		if c.Name != "bs5-page-aligned-rank0" && c.Name != "bs5-page-aligned-rank1" {
			continue
		}
		seen++
		out, err := ref.FP8StoreValidRows(spec.DefaultLimits(), c.In)
		if err != nil {
			t.Fatal(err)
		}
		if err := propHolds(t, sp.Props, name, c.In, out); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		bad := spec.FP8StoreValidRowsOutput{Pool: c.In.Pool}
		bad.Pool.Rows = spec.Rows{W: out.Pool.Rows.W, B: append([]byte{}, out.Pool.Rows.B...)}
		s := c.In.ReqToToken[0][c.In.PrefixLens[0]+c.In.Rank]
		bad.Pool.Rows.Row(int(s))[0] ^= 1
		if propHolds(t, sp.Props, name, c.In, bad) == nil {
			t.Errorf("%s: a wrong byte at current slot %d was not caught", c.Name, s)
		}
	}
	if seen != 2 {
		t.Fatalf("%d bs=5 cases in the boundary table, want 2", seen)
	}
}

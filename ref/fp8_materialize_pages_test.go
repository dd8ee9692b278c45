package ref_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
)

// fp8TestRows returns n 656-byte rows, row i filled with byte base+i.
func fp8TestRows(n int, base byte) ref.Rows {
	x := ref.NewRows(ref.FP8RowBytes, n)
	for i := range n {
		for b := range x.Row(i) {
			x.Row(i)[b] = base + byte(i)
		}
	}
	return x
}

// TestFP8StoreMaterializeRoundTrip is P7.1 on a bs=2 page-aligned store
// (ps=2, size=6: 8 slots; request 0 on page 2, request 1 on pages 1, 3).
func TestFP8StoreMaterializeRoundTrip(t *testing.T) {
	lim := ref.DefaultLimits()
	pool := ref.FP8Pool{PageSize: 2, Size: 6, Rows: fp8TestRows(8, 0)}
	locs := []int64{4, 5, 2, 3, 6, 7}
	rows := fp8TestRows(6, 100)
	st, err := ref.FP8StorePages(lim, ref.FP8StorePagesInput{Pool: pool, Locs: locs, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.FP8MaterializePages(lim, ref.FP8MaterializePagesInput{Pool: st.Pool, Slots: locs})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Rows.B, rows.B) {
		t.Error("materialize(store(rows)) != rows")
	}
	for _, s := range []int{0, 1} {
		if st.Pool.Rows.Row(s)[0] != byte(s) {
			t.Errorf("slot %d changed", s)
		}
	}
	if pool.Rows.Row(4)[0] != 4 {
		t.Error("store mutated its input pool")
	}
}

// TestFP8PoolBadInput is §7.4's bad-input table.
func TestFP8PoolBadInput(t *testing.T) {
	lim := ref.DefaultLimits()
	pool := ref.FP8Pool{PageSize: 2, Size: 2, Rows: fp8TestRows(4, 0)}
	for _, tc := range []struct {
		name  string
		in    ref.FP8StorePagesInput
		want  *ref.Sentinel
		field string
	}{
		{"loc-num-slots", ref.FP8StorePagesInput{Pool: pool, Locs: []int64{4}, Rows: fp8TestRows(1, 9)}, ref.ErrSlotOutOfRange, "locs[0]"},
		{"loc-negative", ref.FP8StorePagesInput{Pool: pool, Locs: []int64{0, -1}, Rows: fp8TestRows(2, 9)}, ref.ErrSlotOutOfRange, "locs[1]"},
		{"duplicate", ref.FP8StorePagesInput{Pool: pool, Locs: []int64{3, 1, 3}, Rows: fp8TestRows(3, 9)}, ref.ErrDuplicateSlot, "locs[2]"},
		{"length", ref.FP8StorePagesInput{Pool: pool, Locs: []int64{0}, Rows: fp8TestRows(2, 9)}, ref.ErrLengthMismatch, "rows"},
		{"row-width", ref.FP8StorePagesInput{Pool: pool, Locs: []int64{}, Rows: ref.Rows{W: 1152, B: []byte{}}}, ref.ErrUnsupportedDims, "rows.w"},
		{"page-size", ref.FP8StorePagesInput{Pool: ref.FP8Pool{PageSize: 0, Size: 4, Rows: fp8TestRows(4, 0)}, Locs: []int64{}, Rows: fp8TestRows(0, 0)}, ref.ErrPagePlan, "pool.page_size"},
		{"size", ref.FP8StorePagesInput{Pool: ref.FP8Pool{PageSize: 2, Size: -2, Rows: fp8TestRows(0, 0)}, Locs: []int64{}, Rows: fp8TestRows(0, 0)}, ref.ErrNegative, "pool.size"},
		{"pool-rows", ref.FP8StorePagesInput{Pool: ref.FP8Pool{PageSize: 2, Size: 3, Rows: fp8TestRows(4, 0)}, Locs: []int64{}, Rows: fp8TestRows(0, 0)}, ref.ErrRowCount, "pool.rows"},
	} {
		_, err := ref.FP8StorePages(lim, tc.in)
		ie, ok := ref.AsInputError(err)
		if !ok || !errors.Is(err, tc.want) || ie.Field != tc.field {
			t.Errorf("%s: got %v, want %v at %s", tc.name, err, tc.want, tc.field)
		}
	}
	_, err := ref.FP8MaterializePages(lim, ref.FP8MaterializePagesInput{Pool: pool, Slots: []int64{0, 4}})
	if ie, ok := ref.AsInputError(err); !ok || !errors.Is(err, ref.ErrSlotOutOfRange) || ie.Field != "slots[1]" {
		t.Errorf("materialize slot 4 of 4: got %v", err)
	}
}

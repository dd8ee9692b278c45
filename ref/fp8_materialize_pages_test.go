package ref_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// fp8TestRows returns n 656-byte rows, row i filled with byte base+i.
func fp8TestRows(n int, base byte) spec.Rows {
	x := ref.NewRows(spec.FP8RowBytes, n)
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
	lim := spec.DefaultLimits()
	pool := spec.FP8Pool{PageSize: 2, Size: 6, Rows: fp8TestRows(8, 0)}
	locs := []int64{4, 5, 2, 3, 6, 7}
	rows := fp8TestRows(6, 100)
	st, err := ref.FP8StorePages(lim, spec.FP8StorePagesInput{Pool: pool, Locs: locs, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ref.FP8MaterializePages(lim, spec.FP8MaterializePagesInput{Pool: st.Pool, Slots: locs})
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
	lim := spec.DefaultLimits()
	pool := spec.FP8Pool{PageSize: 2, Size: 2, Rows: fp8TestRows(4, 0)}
	for _, tc := range []struct {
		name  string
		in    spec.FP8StorePagesInput
		want  *spec.Sentinel
		field string
	}{
		{"loc-num-slots", spec.FP8StorePagesInput{Pool: pool, Locs: []int64{4}, Rows: fp8TestRows(1, 9)}, spec.ErrSlotOutOfRange, "locs[0]"},
		{"loc-negative", spec.FP8StorePagesInput{Pool: pool, Locs: []int64{0, -1}, Rows: fp8TestRows(2, 9)}, spec.ErrSlotOutOfRange, "locs[1]"},
		{"duplicate", spec.FP8StorePagesInput{Pool: pool, Locs: []int64{3, 1, 3}, Rows: fp8TestRows(3, 9)}, spec.ErrDuplicateSlot, "locs[2]"},
		{"length", spec.FP8StorePagesInput{Pool: pool, Locs: []int64{0}, Rows: fp8TestRows(2, 9)}, spec.ErrLengthMismatch, "rows"},
		{"row-width", spec.FP8StorePagesInput{Pool: pool, Locs: []int64{}, Rows: spec.Rows{W: 1152, B: []byte{}}}, spec.ErrUnsupportedDims, "rows.w"},
		{"page-size", spec.FP8StorePagesInput{Pool: spec.FP8Pool{PageSize: 0, Size: 4, Rows: fp8TestRows(4, 0)}, Locs: []int64{}, Rows: fp8TestRows(0, 0)}, spec.ErrPagePlan, "pool.page_size"},
		{"size", spec.FP8StorePagesInput{Pool: spec.FP8Pool{PageSize: 2, Size: -2, Rows: fp8TestRows(0, 0)}, Locs: []int64{}, Rows: fp8TestRows(0, 0)}, spec.ErrNegative, "pool.size"},
		{"pool-rows", spec.FP8StorePagesInput{Pool: spec.FP8Pool{PageSize: 2, Size: 3, Rows: fp8TestRows(4, 0)}, Locs: []int64{}, Rows: fp8TestRows(0, 0)}, spec.ErrRowCount, "pool.rows"},
	} {
		_, err := ref.FP8StorePages(lim, tc.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, tc.want) || ie.Field != tc.field {
			t.Errorf("%s: got %v, want %v at %s", tc.name, err, tc.want, tc.field)
		}
	}
	_, err := ref.FP8MaterializePages(lim, spec.FP8MaterializePagesInput{Pool: pool, Slots: []int64{0, 4}})
	if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrSlotOutOfRange) || ie.Field != "slots[1]" {
		t.Errorf("materialize slot 4 of 4: got %v", err)
	}
}

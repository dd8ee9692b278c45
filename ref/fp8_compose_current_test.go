package ref_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// bf16Row is one 1152-byte row: k_nope all nope, k_rope all zero.
func bf16Row(n int, nope uint16) spec.Rows {
	x := ref.NewRows(spec.MLABF16RowBytes, n)
	for i := range n {
		for j := range spec.MLANopeDim {
			binary.LittleEndian.PutUint16(x.Row(i)[2*j:], nope)
		}
	}
	return x
}

// TestComposeSeedMinimal is §7.5's historic bug 1 minimal input: ps=2, one
// request, P=2, L=1, the pool row at the current slot all-zero, fresh
// k_nope = 1.0: the current row is codes 0x7E ×512 with scale fl32(1/448),
// not the 656 zero bytes a full materialize reads.
func TestComposeSeedMinimal(t *testing.T) {
	pool := spec.FP8Pool{PageSize: 2, Size: 4, Rows: ref.NewRows(spec.FP8RowBytes, 6)}
	for i := range pool.Rows.Row(2) {
		pool.Rows.Row(2)[i], pool.Rows.Row(3)[i] = 1, 2
	}
	out, err := ref.FP8ComposeCurrent(spec.DefaultLimits(), spec.FP8ComposeCurrentInput{
		Pool: pool, PrefixSlots: [][]int64{{2, 3}}, CurrentSlots: [][]int64{{4}}, Lens: []int{1},
		Contract: spec.ContractGlobalValid, Current: bf16Row(1, 0x3F80),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Rows.N() != 3 || out.Rows.Row(0)[0] != 1 || out.Rows.Row(1)[0] != 2 {
		t.Fatalf("prefix rows wrong: %d rows", out.Rows.N())
	}
	cur := out.Rows.Row(2)
	for j := range 512 {
		if cur[j] != 0x7E {
			t.Fatalf("code %d = %#x, want 0x7E", j, cur[j])
		}
	}
	want := math.Float32bits(float32(1) / 448)
	for tile := range 4 {
		if got := binary.LittleEndian.Uint32(cur[512+4*tile:]); got != want {
			t.Errorf("scale %d = %#x, want %#x", tile, got, want)
		}
	}
}

// TestComposeContracts is §7.5's historic bug 2 minimal input and the
// contract table: padded cp=2, g=1, L=[3]; 3 global valid rows are
// ErrRowContract as cp-local compute-padded rows (R(0)+R(1) = 4) and
// accepted as global valid rows; compute-padded rows without a CP layout
// are ErrRowContract.
func TestComposeContracts(t *testing.T) {
	lim := spec.DefaultLimits()
	pool := spec.FP8Pool{PageSize: 1, Size: 4, Rows: ref.NewRows(spec.FP8RowBytes, 5)}
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3}, Granule: 1}
	in := spec.FP8ComposeCurrentInput{Pool: pool, PrefixSlots: [][]int64{{}}, CurrentSlots: [][]int64{{1, 2, 3}}, Lens: []int{3}, Layout: &sp, Contract: spec.ContractLocalComputePadded, Current: bf16Row(3, 0x3F80)}
	if _, err := ref.FP8ComposeCurrent(lim, in); !errors.Is(err, spec.ErrRowContract) {
		t.Errorf("global rows as compute-padded: got %v, want ErrRowContract", err)
	}
	in.Contract = spec.ContractGlobalValid
	if _, err := ref.FP8ComposeCurrent(lim, in); err != nil {
		t.Errorf("global rows as global_valid: %v", err)
	}
	in.Layout, in.Contract = nil, spec.ContractLocalComputePadded
	if _, err := ref.FP8ComposeCurrent(lim, in); !errors.Is(err, spec.ErrRowContract) {
		t.Errorf("compute-padded without CP: got %v, want ErrRowContract", err)
	}
	in.Contract = spec.ContractLocalValid
	if _, err := ref.FP8ComposeCurrent(lim, in); err != nil {
		t.Errorf("local_valid without CP is global: %v", err)
	}
	in.Contract, in.PrefixSlots = spec.ContractGlobalValid, [][]int64{{0}}
	in.Pool.PageSize, in.Pool.Size = 2, 3
	if _, err := ref.FP8ComposeCurrent(lim, in); !errors.Is(err, spec.ErrPagePlan) {
		t.Errorf("prefix of 1 slot with ps=2: got %v, want ErrPagePlan", err)
	}
}

package ref_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// worked34 is docs/spec/transfer.md §3.4: MLA, two layers, item_len 1024.
func worked34() spec.TransferLayerBlocksInput {
	return spec.TransferLayerBlocksInput{
		IsMLA: true, Owned: []int64{3, 4, 9}, DstPages: []int64{20, 21, 22},
		SrcPtrs: []uint64{0x10000000, 0x20000000}, DstPtrs: []uint64{0x90000000, 0xA0000000},
		ItemLens: []uint64{1024, 1024},
	}
}

// TestTransferLayerBlocksWorkedExample pins §3.4 block for block, entry-major.
func TestTransferLayerBlocksWorkedExample(t *testing.T) {
	got, err := ref.TransferLayerBlocks(spec.DefaultLimits(), worked34())
	if err != nil {
		t.Fatal(err)
	}
	want := spec.TransferLayerBlocksOutput{
		Runs: []spec.Run{{SrcStart: 3, DstStart: 20, Count: 2}, {SrcStart: 9, DstStart: 22, Count: 1}},
		Blocks: []spec.Block{
			{Src: 0x10000C00, Dst: 0x90005000, Len: 2048}, {Src: 0x10002400, Dst: 0x90005800, Len: 1024}, // layer 0
			{Src: 0x20000C00, Dst: 0xA0005000, Len: 2048}, {Src: 0x20002400, Dst: 0xA0005800, Len: 1024}, // layer 1
		},
		BlocksPerEntry: 2,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("§3.4 (-want +got):\n%s", d)
	}
}

// TestBuildLayerBlocksIsOneLayerOfTheBatch pins §3.5 property 3 on §3.4: the seed's
// per-layer function gives exactly layer 1's slice of the monolithic batch.
func TestBuildLayerBlocksIsOneLayerOfTheBatch(t *testing.T) {
	out, err := ref.TransferLayerBlocks(spec.DefaultLimits(), worked34())
	if err != nil {
		t.Fatal(err)
	}
	layer1 := ref.BuildLayerBlocks(0x20000000, 0xA0000000, 1024, out.Runs)
	if d := cmp.Diff(out.Blocks[2:], layer1); d != "" {
		t.Errorf("layer 1 (-batch +per-layer):\n%s", d)
	}
}

// TestMHAEntriesAreAllKThenAllVEachWithItsOwnItemLen pins §3.2 MHA with PP
// slicing: K_l writes dst[start+l], V_l writes dst[D+start+l], and each
// entry scales by its own item_lens[e] (the decision for unequal K/V lens).
func TestMHAEntriesAreAllKThenAllVEachWithItsOwnItemLen(t *testing.T) {
	in := spec.TransferLayerBlocksInput{
		Owned: []int64{2}, DstPages: []int64{5},
		SrcPtrs:    []uint64{0x1000, 0x2000, 0x3000, 0x4000},                       // K0 K1 V0 V1
		DstPtrs:    []uint64{0xa0000, 0xb0000, 0xc0000, 0xd0000, 0xe0000, 0xf0000}, // K0..K2 V0..V2
		ItemLens:   []uint64{64, 64, 32, 32},
		StartLayer: 1,
	}
	got, err := ref.TransferLayerBlocks(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.Block{
		{Src: 0x1000 + 2*64, Dst: 0xb0000 + 5*64, Len: 64}, // K0 → decode K1
		{Src: 0x2000 + 2*64, Dst: 0xc0000 + 5*64, Len: 64}, // K1 → decode K2
		{Src: 0x3000 + 2*32, Dst: 0xe0000 + 5*32, Len: 32}, // V0 → decode V1
		{Src: 0x4000 + 2*32, Dst: 0xf0000 + 5*32, Len: 32}, // V1 → decode V2
	}
	if d := cmp.Diff(want, got.Blocks); d != "" {
		t.Errorf("MHA blocks (-want +got):\n%s", d)
	}
}

// TestStartLayerIsIgnoredWhenLayerCountsMatch pins §3.2: PP slicing only
// applies when the decode side has a different number of layers.
func TestStartLayerIsIgnoredWhenLayerCountsMatch(t *testing.T) {
	in := worked34()
	in.StartLayer = 5
	got, err := ref.TransferLayerBlocks(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Blocks[2].Dst != 0xA0005000 {
		t.Errorf("layer 1 writes %#x, want decode layer 1 at 0xA0005000", got.Blocks[2].Dst)
	}
}

// TestNoPagesGiveEmptyListsNotNull: a chunk with nothing owned encodes as [].
func TestNoPagesGiveEmptyListsNotNull(t *testing.T) {
	in := worked34()
	in.Owned, in.DstPages = []int64{}, []int64{}
	got, err := ref.TransferLayerBlocks(spec.DefaultLimits(), in)
	if err != nil || got.Runs == nil || got.Blocks == nil || got.BlocksPerEntry != 0 {
		t.Errorf("got %+v, %v; want empty non-nil runs and blocks", got, err)
	}
}

// TestTransferLayerBlocksRejectsBadInputNamingFieldAndBound pins every §3 bad input
// and its field, value and bound.
func TestTransferLayerBlocksRejectsBadInputNamingFieldAndBound(t *testing.T) {
	with := func(f func(*spec.TransferLayerBlocksInput)) spec.TransferLayerBlocksInput {
		in := worked34()
		f(&in)
		return in
	}
	mha := func(f func(*spec.TransferLayerBlocksInput)) spec.TransferLayerBlocksInput {
		return with(func(in *spec.TransferLayerBlocksInput) { in.IsMLA = false; f(in) })
	}
	top := uint64(math.MaxUint64)
	cases := []struct {
		name  string
		in    spec.TransferLayerBlocksInput
		want  *spec.Sentinel
		field string
		value any
		bound string
	}{
		{"one side empty is a mismatch on the KV path", with(func(in *spec.TransferLayerBlocksInput) { in.DstPages = nil }),
			spec.ErrLengthMismatch, "dst_pages", 0, "== len(owned) (3)"},
		{"negative owned page", with(func(in *spec.TransferLayerBlocksInput) { in.Owned = []int64{3, -4, 9} }),
			spec.ErrNegative, "owned[1]", int64(-4), ">= 0"},
		{"negative dst page", with(func(in *spec.TransferLayerBlocksInput) { in.DstPages = []int64{20, 21, -22} }),
			spec.ErrNegative, "dst_pages[2]", int64(-22), ">= 0"},
		{"duplicate dst page (§3.5 property 4)", with(func(in *spec.TransferLayerBlocksInput) { in.DstPages = []int64{20, 21, 20} }),
			spec.ErrDuplicateDstPage, "dst_pages[2]", int64(20), "distinct from dst_pages[0]"},
		{"negative start_layer", with(func(in *spec.TransferLayerBlocksInput) { in.StartLayer = -1 }),
			spec.ErrNegative, "start_layer", int64(-1), ">= 0"},
		{"odd MHA src pointers", mha(func(in *spec.TransferLayerBlocksInput) { in.SrcPtrs = in.SrcPtrs[:1] }),
			spec.ErrOddMHAPtrs, "src_ptrs", 1, "an even count (all K, then all V) when is_mla is false"},
		{"odd MHA dst pointers", mha(func(in *spec.TransferLayerBlocksInput) { in.DstPtrs = append(in.DstPtrs, 1) }),
			spec.ErrOddMHAPtrs, "dst_ptrs", 3, "an even count (all K, then all V) when is_mla is false"},
		{"item_lens not one per src entry", with(func(in *spec.TransferLayerBlocksInput) { in.ItemLens = in.ItemLens[:1] }),
			spec.ErrLengthMismatch, "item_lens", 1, "== len(src_ptrs) (2)"},
		{"src_data_lens not one per src entry", with(func(in *spec.TransferLayerBlocksInput) { in.SrcDataLens = []uint64{1} }),
			spec.ErrLengthMismatch, "src_data_lens", 1, "== len(src_ptrs) (2), or empty"},
		{"dst_data_lens not one per dst pointer", with(func(in *spec.TransferLayerBlocksInput) { in.DstDataLens = []uint64{1, 2, 3} }),
			spec.ErrLengthMismatch, "dst_data_lens", 3, "== len(dst_ptrs) (2), or empty"},
		{"PP slice past the decode layers", with(func(in *spec.TransferLayerBlocksInput) { in.DstPtrs = []uint64{1, 2, 3}; in.StartLayer = 2 }),
			spec.ErrDstPtrRange, "start_layer", int64(2), "start_layer + 2 <= 3 decode entries"},
		{"more prefill than decode layers", with(func(in *spec.TransferLayerBlocksInput) { in.DstPtrs = []uint64{1} }),
			spec.ErrDstPtrRange, "start_layer", int64(0), "start_layer + 2 <= 1 decode entries"},
		{"MHA PP slice past the decode layers", mha(func(in *spec.TransferLayerBlocksInput) { in.DstPtrs = []uint64{1, 2, 3, 4}; in.StartLayer = 2 }),
			spec.ErrDstPtrRange, "start_layer", int64(2), "start_layer + 1 <= 2 decode layers per K/V half"},
		{"zero item_len", with(func(in *spec.TransferLayerBlocksInput) { in.ItemLens = []uint64{1024, 0} }),
			spec.ErrZeroItemLen, "item_lens[1]", uint64(0), ">= 1"},
		{"MLA layers with different item lens", with(func(in *spec.TransferLayerBlocksInput) { in.ItemLens = []uint64{1024, 512} }),
			spec.ErrItemLenMismatch, "item_lens[1]", uint64(512), "== item_lens[0] (1024): MLA moves every layer with one item_len"},
		{"src address wraps past 2^64 at the first page that passes it", with(func(in *spec.TransferLayerBlocksInput) { in.SrcPtrs[1] = top - 4*1024 }),
			spec.ErrOverflow, "owned[1]", int64(4), "src_ptrs[1] (0xffffffffffffefff) + (page+1)*item_len (1024) <= 18446744073709551615"},
		{"dst page times item_len wraps", with(func(in *spec.TransferLayerBlocksInput) { in.DstPages = []int64{20, 21, 1 << 60} }),
			spec.ErrOverflow, "dst_pages[2]", int64(1 << 60), "dst_ptrs[0] (0x90000000) + (page+1)*item_len (1024) <= 18446744073709551615"},
		{"src block past its buffer (§3.5 property 5)", with(func(in *spec.TransferLayerBlocksInput) { in.SrcDataLens = []uint64{10 * 1024, 10*1024 - 1} }),
			spec.ErrOutOfBounds, "owned[2]", int64(9), "(page+1)*item_len (1024) <= src_data_lens[1] (10239)"},
		{"dst block past its buffer (§3.5 property 5)", with(func(in *spec.TransferLayerBlocksInput) { in.DstDataLens = []uint64{22 * 1024, 23 * 1024} }),
			spec.ErrOutOfBounds, "dst_pages[2]", int64(22), "(page+1)*item_len (1024) <= dst_data_lens[0] (22528)"},
	}
	for _, c := range cases {
		_, err := ref.TransferLayerBlocks(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Value != c.value || ie.Bound != c.bound {
			t.Errorf("%s: got %v, want %s on %s = %v (%s)", c.name, err, c.want.Code(), c.field, c.value, c.bound)
		}
	}
}

// TestTransferLayerBlocksChecksTheOutputSizeBeforeAllocating: entries × runs
// blocks is a product of input sizes, so it is held to Limits.
func TestTransferLayerBlocksChecksTheOutputSizeBeforeAllocating(t *testing.T) {
	_, err := ref.TransferLayerBlocks(spec.Limits{MaxOutputBytes: 3 * ref.BlockBytes}, worked34())
	ie, ok := spec.AsInputError(err)
	if !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != "blocks" || ie.Value != int64(4) {
		t.Errorf("got %v, want too_large on blocks = 4", err)
	}
}

package equiv_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// propHolds runs the property called name of props on (in, out).
func propHolds[In, Out any](t *testing.T, props []equiv.Prop[In, Out], name string, in In, out Out) error {
	t.Helper()
	for _, p := range props {
		if p.Name == name {
			return p.Holds(spec.DefaultLimits(), in, out)
		}
	}
	t.Fatalf("no property %q", name)
	return nil
}

// propsCatchBreaks requires every property of props to hold on good and to
// fail on a deep copy of good broken by broken[name]: a property that no
// break is given for, or that a break does not trip, cannot fail.
func propsCatchBreaks[In, Out any](t *testing.T, props []equiv.Prop[In, Out], in In, good Out, broken map[string]func(*Out)) {
	t.Helper()
	for _, p := range props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's run: %v", p.Name, err)
		}
		breakIt, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken result for property %s", p.Name)
			continue
		}
		bad := deepCopyJSON(t, good)
		breakIt(&bad)
		if propHolds(t, props, p.Name, in, bad) == nil {
			t.Errorf("%s holds on a broken result", p.Name)
		}
	}
}

// deepCopyJSON copies v through its JSON encoding, so a break of the copy
// cannot reach the original's slices.
func deepCopyJSON[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var c T
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGroupPropertiesCatchWrongRuns: each §2 property holds on ref's runs
// and fails on a result broken the way that property guards against.
func TestGroupPropertiesCatchWrongRuns(t *testing.T) {
	sp := equiv.TransferGroupContiguous()
	in := spec.TransferGroupContiguousInput{Src: []int64{1, 2, 3, 7, 8}, Dst: []int64{10, 11, 12, 13, 14}}
	good, err := ref.TransferGroupContiguous(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	broken := map[string][]spec.Run{
		"concat-equals-input":           {{SrcStart: 1, DstStart: 10, Count: 3}, {SrcStart: 7, DstStart: 14, Count: 2}},
		"equal-run-lengths":             {{SrcStart: 1, DstStart: 10, Count: 3}, {SrcStart: 7, DstStart: 13, Count: 0}, {SrcStart: 7, DstStart: 13, Count: 2}},
		"plus-one-inside-runs":          {{SrcStart: 1, DstStart: 10, Count: 5}},
		"maximal-at-boundaries":         {{SrcStart: 1, DstStart: 10, Count: 1}, {SrcStart: 2, DstStart: 11, Count: 2}, {SrcStart: 7, DstStart: 13, Count: 2}},
		"runs-equal-one-plus-breaks":    {{SrcStart: 1, DstStart: 10, Count: 1}, {SrcStart: 2, DstStart: 11, Count: 2}, {SrcStart: 7, DstStart: 13, Count: 2}},
		"single-run-regroups-to-itself": {{SrcStart: 1, DstStart: 10, Count: 1}, {SrcStart: 2, DstStart: 11, Count: 2}, {SrcStart: -7, DstStart: 13, Count: 2}},
	}
	for _, p := range sp.Props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's runs: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken result for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, in, spec.TransferGroupContiguousOutput{Runs: bad}) == nil {
			t.Errorf("%s holds on broken runs %v", p.Name, bad)
		}
	}
}

// TestTransferLayerBlocksPropertiesCatchWrongBlocks: each §3.5 property holds on
// ref's batch and fails on a batch broken the way it guards against.
func TestTransferLayerBlocksPropertiesCatchWrongBlocks(t *testing.T) {
	sp := equiv.TransferLayerBlocks()
	in := spec.TransferLayerBlocksInput{ // §3.4 as MHA, K and V lens differing
		Owned: []int64{3, 4, 9}, DstPages: []int64{20, 21, 22},
		SrcPtrs: []uint64{0x10000000, 0x20000000}, DstPtrs: []uint64{0x90000000, 0xA0000000},
		ItemLens: []uint64{1024, 512}, SrcDataLens: []uint64{10 * 1024, 10 * 512},
	}
	good, err := ref.TransferLayerBlocks(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*spec.TransferLayerBlocksOutput)) spec.TransferLayerBlocksOutput {
		out := good
		out.Runs, out.Blocks = slices.Clone(good.Runs), slices.Clone(good.Blocks)
		f(&out)
		return out
	}
	broken := map[string]spec.TransferLayerBlocksOutput{
		// The runs of a perturbed page list (§3's other suggested mutation).
		"runs-are-grouped-pages": with(func(o *spec.TransferLayerBlocksOutput) { o.Runs[1].SrcStart = 8 }),
		// K scaled by V's item len: v-item-len-for-k.
		"cross-layer-invariant": with(func(o *spec.TransferLayerBlocksOutput) { o.Blocks[0].Src = 0x10000000 + 3*512 }),
		"byte-count":            with(func(o *spec.TransferLayerBlocksOutput) { o.Blocks[3].Len = 1024 }),
		"per-layer-concat-equals-monolithic": with(func(o *spec.TransferLayerBlocksOutput) {
			o.Blocks[0], o.Blocks[1] = o.Blocks[1], o.Blocks[0]
		}),
		"disjoint-dst-ranges": with(func(o *spec.TransferLayerBlocksOutput) { o.Blocks[1].Dst = o.Blocks[0].Dst + 1024 }),
		"within-data-bounds":  with(func(o *spec.TransferLayerBlocksOutput) { o.Blocks[3].Src += 512 }),
	}
	for _, p := range sp.Props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's batch: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken batch for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, in, bad) == nil {
			t.Errorf("%s holds on a broken batch %+v", p.Name, bad)
		}
	}
}

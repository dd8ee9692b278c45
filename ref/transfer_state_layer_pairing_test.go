package ref_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// reg registers one state buffer per id, all with the same item_len.
func reg(ids ...int64) spec.StateRegistration {
	r := spec.StateRegistration{LayerIDs: ids}
	for k := range ids {
		r.Ptrs = append(r.Ptrs, 0x1000*uint64(k+1))
		r.ItemLens = append(r.ItemLens, 8448)
	}
	return r
}

func pairs(ij ...int) []spec.StatePair {
	ps := []spec.StatePair{}
	for k := 0; k < len(ij); k += 2 {
		ps = append(ps, spec.StatePair{Src: ij[k], Dst: ij[k+1], ItemLen: 8448})
	}
	return ps
}

func patternIndex(p string, capacity *spec.HostCapacityTerms) *spec.IndexConfig {
	return &spec.IndexConfig{NumHiddenLayers: int64(len(p)), Pattern: &p, Capacity: capacity}
}

// TestTransferStateLayerPairingWorkedExamples pins docs/spec/transfer.md §6.2's examples and
// §6.1's FSSSFSSS slots.
func TestTransferStateLayerPairingWorkedExamples(t *testing.T) {
	glm := &spec.HostCapacityTerms{KVBytesPerTokenPerLayer: 656, IndexBytesPerTokenPerLayer: 132}
	cases := []struct {
		name string
		in   spec.TransferStateLayerPairingInput
		want spec.TransferStateLayerPairingOutput
	}{
		{"src [0,4] dst [4,0] pairs crosswise", spec.TransferStateLayerPairingInput{PPSize: 1, Src: reg(0, 4), Dst: reg(4, 0)},
			spec.TransferStateLayerPairingOutput{Pairs: pairs(0, 1, 1, 0)}},
		{"pp>1: src [3,7,3,7] into dst [3,7,11,3,7,11] in occurrence order",
			spec.TransferStateLayerPairingInput{PPSize: 2, Src: reg(3, 7, 3, 7), Dst: reg(3, 7, 11, 3, 7, 11)},
			spec.TransferStateLayerPairingOutput{Pairs: pairs(0, 0, 1, 1, 2, 3, 3, 4)}},
		{"FSSSFSSS: A={0,4}, slot(4)=1, drafts after A",
			spec.TransferStateLayerPairingInput{PPSize: 1, Src: reg(0, 4, 1_000_000, 1_000_001), Dst: reg(4, 0, 1_000_001, 1_000_000),
				Index: patternIndex("FSSSFSSS", glm)},
			spec.TransferStateLayerPairingOutput{Pairs: pairs(0, 1, 1, 0, 2, 3, 3, 2), Active: []int64{0, 4},
				SrcSlots: []int64{0, 1, 2, 3}, DstSlots: []int64{1, 0, 3, 2}, HostBytesPerToken: i64(8*656 + 2*132)}},
		{"legacy positional pairing when neither side sends ids",
			spec.TransferStateLayerPairingInput{PPSize: 1, Src: spec.StateRegistration{Ptrs: []uint64{1, 2}, ItemLens: []uint64{8, 9}},
				Dst: spec.StateRegistration{Ptrs: []uint64{3, 4}, ItemLens: []uint64{8, 9}}},
			spec.TransferStateLayerPairingOutput{Positional: true, Pairs: []spec.StatePair{{Src: 0, Dst: 0, ItemLen: 8}, {Src: 1, Dst: 1, ItemLen: 9}}}},
		{"explicit active set",
			spec.TransferStateLayerPairingInput{PPSize: 1, Src: reg(0, 5), Dst: reg(0, 5),
				Index: &spec.IndexConfig{NumHiddenLayers: 6, Active: []int64{0, 2, 5}}},
			spec.TransferStateLayerPairingOutput{Pairs: pairs(0, 0, 1, 1), Active: []int64{0, 2, 5}, SrcSlots: []int64{0, 2}, DstSlots: []int64{0, 2}}},
	}
	for _, c := range cases {
		got, err := ref.TransferStateLayerPairing(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestTransferStateLayerPairingFailsFastInsteadOfPairingByCount pins §6.2's last
// example: equal counts, different layers — an error naming both sides'
// extra ids, where the rejected count-based pairing wrote layer 8 into 12.
func TestTransferStateLayerPairingFailsFastInsteadOfPairingByCount(t *testing.T) {
	_, err := ref.TransferStateLayerPairing(spec.DefaultLimits(), spec.TransferStateLayerPairingInput{PPSize: 1, Src: reg(0, 4, 8), Dst: reg(0, 4, 12)})
	ie, ok := spec.AsInputError(err)
	if !ok || !errors.Is(err, spec.ErrStateLayerIdentityMismatch) {
		t.Fatalf("got %v, want %s", err, spec.ErrStateLayerIdentityMismatch.Code())
	}
	want := ref.StateLayerIdentityMismatch{PrefillOnly: []int64{8}, DecodeOnly: []int64{12}}
	if d := cmp.Diff(want, ie.Value); d != "" {
		t.Errorf("value (-want +got):\n%s", d)
	}
}

// TestStateLayerIdentityMismatchKeepsMultiplicity: a layer registered twice
// on prefill and once on decode is one prefill-only id; with pp > 1 the
// decode extras are not a mismatch and are not reported.
func TestStateLayerIdentityMismatchKeepsMultiplicity(t *testing.T) {
	for _, c := range []struct {
		pp   int
		want ref.StateLayerIdentityMismatch
	}{
		{1, ref.StateLayerIdentityMismatch{PrefillOnly: []int64{3, 9}, DecodeOnly: []int64{2, 5}}},
		{2, ref.StateLayerIdentityMismatch{PrefillOnly: []int64{3, 9}, DecodeOnly: []int64{}}},
	} {
		_, err := ref.TransferStateLayerPairing(spec.DefaultLimits(), spec.TransferStateLayerPairingInput{PPSize: c.pp, Src: reg(9, 3, 3, 1), Dst: reg(5, 1, 3, 2)})
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, spec.ErrStateLayerIdentityMismatch) {
			t.Fatalf("pp %d: got %v", c.pp, err)
		}
		if d := cmp.Diff(c.want, ie.Value); d != "" {
			t.Errorf("pp %d: value (-want +got):\n%s", c.pp, d)
		}
	}
}

// TestActiveIndexLayersOfGLM5Pattern pins docs/spec/cp-layout.md §9.3's 78-layer
// pattern (21 active) and the §6.1 capacity formula on it.
func TestActiveIndexLayersOfGLM5Pattern(t *testing.T) {
	p := "FFF" + strings.Repeat("SSSF", 18) + "SSS"
	a, err := ref.ActiveIndexLayers(spec.IndexConfig{NumHiddenLayers: 78, Pattern: &p})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 21 || a[3] != 6 || a[20] != 74 {
		t.Errorf("active = %v, want 21 layers [0 1 2 6 … 74]", a)
	}
	b, err := ref.HostBytesPerToken(78, int64(len(a)), spec.HostCapacityTerms{KVBytesPerTokenPerLayer: 656, IndexBytesPerTokenPerLayer: 132})
	if err != nil || b != 78*656+21*132 {
		t.Errorf("host bytes = %d, %v; want %d", b, err, 78*656+21*132)
	}
}

// TestTransferStateLayerPairingRejectsBadInputNamingFieldAndBound pins the check
// order of docs/spec/transfer.md §6: config, then rules 1–5, then slots.
func TestTransferStateLayerPairingRejectsBadInputNamingFieldAndBound(t *testing.T) {
	pat := func(p string, L int64) *spec.IndexConfig { return &spec.IndexConfig{NumHiddenLayers: L, Pattern: &p} }
	act := func(L int64, a ...int64) *spec.IndexConfig { return &spec.IndexConfig{NumHiddenLayers: L, Active: a} }
	withCap := func(c *spec.IndexConfig, kv, idx int64) *spec.IndexConfig {
		c.Capacity = &spec.HostCapacityTerms{KVBytesPerTokenPerLayer: kv, IndexBytesPerTokenPerLayer: idx}
		return c
	}
	in := func(src, dst spec.StateRegistration, idx *spec.IndexConfig) spec.TransferStateLayerPairingInput {
		return spec.TransferStateLayerPairingInput{PPSize: 1, Src: src, Dst: dst, Index: idx}
	}
	bothPattern := pat("F", 1)
	bothPattern.Active = []int64{0}
	shortItems := reg(0, 4)
	shortItems.ItemLens = shortItems.ItemLens[:1]
	otherLen := reg(0, 4)
	otherLen.ItemLens[1] = 1
	noIDs := func(n int) spec.StateRegistration { r := reg(make([]int64, n)...); r.LayerIDs = nil; return r }
	longIDs := reg(0, 4)
	longIDs.LayerIDs = append(longIDs.LayerIDs, 8)
	cases := []struct {
		name  string
		in    spec.TransferStateLayerPairingInput
		want  *spec.Sentinel
		field string
	}{
		{"pp_size 0", spec.TransferStateLayerPairingInput{}, spec.ErrBadPPSize, "pp_size"},
		{"negative L", in(reg(), reg(), pat("", -1)), spec.ErrNegative, "index.num_hidden_layers"},
		{"L past the draft base", in(reg(), reg(), pat("F", 1_000_001)), spec.ErrBadIndexPattern, "index.num_hidden_layers"},
		{"neither pattern nor active", in(reg(), reg(), &spec.IndexConfig{NumHiddenLayers: 1}), spec.ErrBadIndexPattern, "index"},
		{"both pattern and active", in(reg(), reg(), bothPattern), spec.ErrBadIndexPattern, "index"},
		{"pattern charset before first layer", in(reg(), reg(), pat("Sf", 2)), spec.ErrBadIndexPattern, "index.pattern"},
		{"pattern first layer shared", in(reg(), reg(), pat("SF", 2)), spec.ErrBadIndexPattern, "index.pattern"},
		{"empty pattern", in(reg(), reg(), pat("", 0)), spec.ErrBadIndexPattern, "index.pattern"},
		{"pattern length", in(reg(), reg(), pat("FS", 3)), spec.ErrBadIndexPattern, "index.pattern"},
		{"active negative", in(reg(), reg(), act(4, 0, -2)), spec.ErrNegative, "index.active[1]"},
		{"active past L", in(reg(), reg(), act(4, 0, 4)), spec.ErrBadIndexPattern, "index.active[1]"},
		{"active not ascending", in(reg(), reg(), act(4, 0, 2, 2)), spec.ErrBadIndexPattern, "index.active[2]"},
		{"active without layer 0", in(reg(), reg(), act(4, 1, 2)), spec.ErrBadIndexPattern, "index.active[0]"},
		{"negative kv bytes", in(reg(), reg(), withCap(pat("F", 1), -1, 0)), spec.ErrNegative, "index.capacity.kv_bytes_per_token_per_layer"},
		{"negative index bytes", in(reg(), reg(), withCap(pat("F", 1), 0, -1)), spec.ErrNegative, "index.capacity.index_bytes_per_token_per_layer"},
		{"L×kv overflows", in(reg(), reg(), withCap(pat("FS", 2), math.MaxInt64, 0)), spec.ErrOverflow, "index.capacity.kv_bytes_per_token_per_layer"},
		{"|A|×index overflows", in(reg(), reg(), withCap(pat("FF", 2), 0, math.MaxInt64)), spec.ErrOverflow, "index.capacity.index_bytes_per_token_per_layer"},
		{"sum overflows", in(reg(), reg(), withCap(pat("F", 1), math.MaxInt64, 1)), spec.ErrOverflow, "index.capacity.index_bytes_per_token_per_layer"},
		{"item_lens not parallel", in(shortItems, reg(0, 4), nil), spec.ErrLengthMismatch, "src.item_lens"},
		{"rule 1: positional counts", in(noIDs(2), noIDs(3), nil), spec.ErrStateCountMismatch, "dst.ptrs"},
		{"rule 2: src ids missing", in(noIDs(2), reg(0, 4), nil), spec.ErrLayerIDsOneSided, "src.layer_ids"},
		{"rule 2: dst ids missing", in(reg(0, 4), noIDs(2), nil), spec.ErrLayerIDsOneSided, "dst.layer_ids"},
		{"rule 3: ids not parallel", in(reg(0, 4), longIDs, nil), spec.ErrLayerIDsLength, "dst.layer_ids"},
		{"negative id", in(reg(0, -4), reg(0, -4), nil), spec.ErrNegative, "src.layer_ids[1]"},
		{"rule 4: identity", in(reg(0, 4, 8), reg(0, 4, 12), nil), spec.ErrStateLayerIdentityMismatch, "src.layer_ids"},
		{"rule 4: missing dst buffer", in(reg(0, 4), reg(4), nil), spec.ErrStateLayerIdentityMismatch, "src.layer_ids"},
		{"rule 5: item_len of the pair", in(reg(0, 4), otherLen, nil), spec.ErrItemLenMismatch, "dst.item_lens[1]"},
		{"rule 5 also binds positional pairs", in(func() spec.StateRegistration { r := noIDs(2); r.ItemLens[1] = 3; return r }(), noIDs(2), nil), spec.ErrItemLenMismatch, "dst.item_lens[1]"},
		{"shared layer has no slot", in(reg(0, 2), reg(0, 2), pat("FSSSFSSS", 8)), spec.ErrNoIndexSlot, "src.layer_ids[1]"},
		{"layer past L has no slot", in(reg(0, 8), reg(0, 8), pat("FSSSFSSS", 8)), spec.ErrNoIndexSlot, "src.layer_ids[1]"},
	}
	for _, c := range cases {
		_, err := ref.TransferStateLayerPairing(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s: got %v, want %s on field %s with a bound", c.name, err, c.want.Code(), c.field)
		}
	}
}

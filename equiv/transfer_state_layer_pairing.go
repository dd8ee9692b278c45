package equiv

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferStateLayerPairing is the differential spec of transfer.state_layer_pairing (docs/spec/transfer.md §6).
func TransferStateLayerPairing() *Spec[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput] {
	return &Spec[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
		Op:          catalog.TransferStateLayerPairing(),
		Valid:       rapid.Custom(func(t *rapid.T) spec.TransferStateLayerPairingInput { return stateDraw(t, stateNeeds{}) }),
		Invalid:     rapid.Custom(stateInvalid),
		Boundary:    stateBoundary(),
		Regressions: stateRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"spec-example-0-4-8-vs-0-4-12": spec.ErrStateLayerIdentityMismatch,
			"state-layers-paired-by-count": spec.ErrStateLayerIdentityMismatch,
			"positional-item-len-differs":  spec.ErrItemLenMismatch,
			"pp2-dst-only-layer-no-slot":   spec.ErrNoIndexSlot,
			"active-first-pair-repeated":   spec.ErrBadIndexPattern,
		},
		Props: []Prop[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
			{"pairing-is-a-bijection-onto-its-image", stateBijection},
			{"pairs-join-equal-layer-ids", statePairsJoinEqualIDs},
			{"repeated-ids-pair-in-occurrence-order", stateOccurrenceOrder},
			{"permuting-both-sides-permutes-the-pairs", statePermutationInvariance},
			{"slot-is-rank-in-active-set", stateSlots},
			{"compact-host-estimate", stateHostEstimate},
		},
	}
}

// stateNeeds forces a drawn input into the shape a violation needs.
type stateNeeds struct {
	ids   bool // layer ids on both sides (not the legacy positional form)
	index bool // an index config
}

// stateDraw draws a registration shaped like NSA index state: an L-layer
// model whose active set A comes from a pattern (upstream's freq rule or
// arbitrary F/S), buffers for A plus up to two draft layers, registered in
// one or two groups (K and V), item_len fixed per group. Decode holds every
// buffer, sometimes in another order (same-id buffers keep their relative
// order, as registration does); prefill holds all of them (pp_size 1) or
// one stage's share of layers (pp_size > 1). Sometimes neither side sends
// ids (legacy), sometimes there is no index config, sometimes capacity terms.
func stateDraw(t *rapid.T, need stateNeeds) spec.TransferStateLayerPairingInput {
	L := rapid.IntRange(1, 24).Draw(t, "num_hidden_layers")
	pattern := drawPattern(t, L)
	var active []int64
	for l := range L {
		if pattern[l] == 'F' {
			active = append(active, int64(l))
		}
	}
	drafts := rapid.IntRange(0, 2).Draw(t, "drafts")
	groups := rapid.IntRange(1, 2).Draw(t, "groups")
	var ids []int64
	var itemLens []uint64
	for g := range groups {
		for _, l := range active {
			ids, itemLens = append(ids, l), append(itemLens, uint64(64*(132+g)))
		}
		for j := range drafts {
			ids, itemLens = append(ids, spec.DraftLayerIDBase+int64(j)), append(itemLens, uint64(64*(656+g)))
		}
	}
	pp := rapid.SampledFrom([]int{1, 1, 2, 4}).Draw(t, "pp_size")
	srcIDs, srcLens := ids, itemLens
	if pp > 1 {
		srcIDs, srcLens = stageShare(t, ids, itemLens, active, pp)
	}
	in := spec.TransferStateLayerPairingInput{
		PPSize: pp,
		Src:    stateRegistration(t, "src", srcIDs, srcLens),
		Dst:    stateRegistration(t, "dst", ids, itemLens),
	}
	if !need.ids && pp == 1 && rapid.IntRange(0, 4).Draw(t, "legacy") == 0 {
		in.Src.LayerIDs, in.Dst.LayerIDs = nil, nil
		in.Dst.ItemLens = slices.Clone(in.Src.ItemLens)
		in.Dst.Ptrs = in.Dst.Ptrs[:len(in.Src.Ptrs)]
	}
	if need.index || rapid.IntRange(0, 3).Draw(t, "index") > 0 {
		in.Index = &spec.IndexConfig{NumHiddenLayers: int64(L)}
		if rapid.Bool().Draw(t, "as_pattern") {
			in.Index.Pattern = &pattern
		} else {
			in.Index.Active = active
		}
		if rapid.Bool().Draw(t, "capacity") {
			in.Index.Capacity = &spec.HostCapacityTerms{
				KVBytesPerTokenPerLayer:    rapid.Int64Range(0, 1024).Draw(t, "kv_bytes"),
				IndexBytesPerTokenPerLayer: rapid.Int64Range(0, 256).Draw(t, "index_bytes"),
			}
		}
	}
	return in
}

// drawPattern draws an index-topk pattern: upstream's freq rule
// (layer l is F iff max(l−1, 0) mod freq == 0), or arbitrary with layer 0 F.
func drawPattern(t *rapid.T, L int) string {
	b := make([]byte, L)
	freq := rapid.IntRange(0, 4).Draw(t, "freq")
	for l := range b {
		switch {
		case l == 0:
			b[l] = 'F'
		case freq > 0 && (l-1)%freq == 0, freq == 0 && rapid.Bool().Draw(t, "full"):
			b[l] = 'F'
		default:
			b[l] = 'S'
		}
	}
	return string(b)
}

// stageShare is one prefill PP stage's buffers: those of a contiguous range
// of active layers (all groups), plus the drafts on the last stage.
func stageShare(t *rapid.T, ids []int64, lens []uint64, active []int64, pp int) ([]int64, []uint64) {
	stage := rapid.IntRange(0, pp-1).Draw(t, "stage")
	per := (len(active) + pp - 1) / pp
	lo := stage * per
	if lo >= len(active) {
		// This stage holds no index layers, so it would send no ids, which
		// rule 2 rejects as one-sided metadata: take the first stage.
		stage, lo = 0, 0
	}
	first, last := active[lo], active[min(lo+per, len(active))-1]
	var sIDs []int64
	var sLens []uint64
	for k, id := range ids {
		if (id >= spec.DraftLayerIDBase && stage == pp-1) || (id >= first && id <= last) {
			sIDs, sLens = append(sIDs, id), append(sLens, lens[k])
		}
	}
	return sIDs, sLens
}

// stateRegistration lays the buffers out at a random base and stride and
// sometimes reorders them, keeping same-id buffers in their relative order.
func stateRegistration(t *rapid.T, side string, ids []int64, lens []uint64) spec.StateRegistration {
	n := len(ids)
	perm := make([]int, n)
	for k := range perm {
		perm[k] = k
	}
	if rapid.Bool().Draw(t, side+"_reorder") {
		for k := n - 1; k > 0; k-- {
			j := rapid.IntRange(0, k).Draw(t, side+"_swap")
			perm[k], perm[j] = perm[j], perm[k]
		}
		keepOccurrenceOrder(perm, ids)
	}
	base := rapid.Uint64Range(1<<40, 1<<44).Draw(t, side+"_base")
	stride := rapid.Uint64Range(1, 1<<20).Draw(t, side+"_stride")
	r := spec.StateRegistration{Ptrs: make([]uint64, n), ItemLens: make([]uint64, n), LayerIDs: make([]int64, n)}
	for k, from := range perm {
		r.Ptrs[k], r.ItemLens[k], r.LayerIDs[k] = base+uint64(k)*stride, lens[from], ids[from]
	}
	return r
}

// keepOccurrenceOrder rewrites perm so that the positions holding one id
// take that id's buffers in their original order.
func keepOccurrenceOrder(perm []int, ids []int64) {
	byID := map[int64][]int{}
	for _, from := range perm {
		byID[ids[from]] = append(byID[ids[from]], from)
	}
	for _, froms := range byID {
		slices.Sort(froms)
	}
	for k, from := range perm {
		id := ids[from]
		perm[k], byID[id] = byID[id][0], byID[id][1:]
	}
}

// stateInvalid breaks one rule of docs/spec/transfer.md §6 in a valid input; the
// config is checked before the registrations, rules 1–5 in order, then the
// slots, so each violation below is the first one ref meets.
func stateInvalid(t *rapid.T) Bad[spec.TransferStateLayerPairingInput] {
	type bad = Bad[spec.TransferStateLayerPairingInput]
	v := rapid.IntRange(0, 15).Draw(t, "violation")
	in := stateDraw(t, stateNeeds{ids: v >= 11, index: v >= 1 && v <= 8 || v == 15})
	switch v {
	case 0:
		in.PPSize = rapid.IntRange(-2, 0).Draw(t, "bad_pp_size")
		return bad{in, spec.ErrBadPPSize}
	case 1:
		in.Index.NumHiddenLayers = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_L")
		return bad{in, spec.ErrNegative}
	case 2:
		in.Index.NumHiddenLayers = rapid.Int64Range(spec.DraftLayerIDBase+1, math.MaxInt64).Draw(t, "huge_L")
		return bad{in, spec.ErrBadIndexPattern}
	case 3:
		return bad{stateBadPattern(t, in), spec.ErrBadIndexPattern}
	case 4:
		return stateBadActive(t, in)
	case 5:
		if rapid.Bool().Draw(t, "both") {
			p := strings.Repeat("F", int(in.Index.NumHiddenLayers))
			in.Index.Pattern, in.Index.Active = &p, []int64{0}
		} else {
			in.Index.Pattern, in.Index.Active = nil, nil
		}
		return bad{in, spec.ErrBadIndexPattern}
	case 6, 7:
		c := spec.HostCapacityTerms{KVBytesPerTokenPerLayer: math.MaxInt64, IndexBytesPerTokenPerLayer: math.MaxInt64}
		want := spec.ErrOverflow
		if v == 6 {
			c = spec.HostCapacityTerms{}
			*pick(t, &c.KVBytesPerTokenPerLayer, &c.IndexBytesPerTokenPerLayer) = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_bytes")
			want = spec.ErrNegative
		}
		in.Index.Capacity = &c
		return bad{in, want}
	case 8:
		r := pick(t, &in.Src, &in.Dst)
		r.ItemLens = append(r.ItemLens, 4096)
		return bad{in, spec.ErrLengthMismatch}
	case 9:
		in.Src.LayerIDs, in.Dst.LayerIDs = nil, nil
		if len(in.Dst.Ptrs) == len(in.Src.Ptrs) || rapid.Bool().Draw(t, "grow") {
			in.Dst.Ptrs, in.Dst.ItemLens = append(in.Dst.Ptrs, 0xdead000), append(in.Dst.ItemLens, 4096)
		}
		return bad{in, spec.ErrStateCountMismatch}
	case 10:
		if len(in.Src.LayerIDs) == 0 {
			in.Src.LayerIDs = []int64{0}
		}
		pick(t, &in.Src, &in.Dst).LayerIDs = nil
		if len(in.Src.LayerIDs)+len(in.Dst.LayerIDs) == 0 {
			in.Dst.LayerIDs = []int64{0}
		}
		return bad{in, spec.ErrLayerIDsOneSided}
	case 11:
		r := pick(t, &in.Src, &in.Dst)
		r.LayerIDs = append(r.LayerIDs, 0)
		return bad{in, spec.ErrLayerIDsLength}
	case 12:
		k := rapid.IntRange(0, len(in.Src.LayerIDs)-1).Draw(t, "negative_at")
		in.Src.LayerIDs[k] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_id")
		return bad{in, spec.ErrNegative}
	case 13:
		return bad{stateIdentityBroken(t, in), spec.ErrStateLayerIdentityMismatch}
	case 14:
		k := rapid.IntRange(0, len(in.Src.ItemLens)-1).Draw(t, "item_len_at")
		in.Src.ItemLens[k] += rapid.Uint64Range(1, 64).Draw(t, "item_len_delta")
		return bad{in, spec.ErrItemLenMismatch}
	default:
		return bad{stateNoSlot(t, in), spec.ErrNoIndexSlot}
	}
}

func pick[T any](t *rapid.T, a, b *T) *T {
	if rapid.Bool().Draw(t, "second") {
		return b
	}
	return a
}

// stateBadPattern breaks the pattern's charset, its first layer or its length.
func stateBadPattern(t *rapid.T, in spec.TransferStateLayerPairingInput) spec.TransferStateLayerPairingInput {
	L := in.Index.NumHiddenLayers
	b := []byte(strings.Repeat("S", int(L)))
	b[0] = 'F'
	switch rapid.IntRange(0, 2).Draw(t, "pattern_rule") {
	case 0:
		b[rapid.IntRange(0, len(b)-1).Draw(t, "bad_char_at")] = rapid.SampledFrom([]byte("fsX0 -")).Draw(t, "bad_char")
	case 1:
		b[0] = 'S'
	default:
		in.Index.NumHiddenLayers = L + rapid.SampledFrom([]int64{-L, -1, 1, 7}).Filter(func(d int64) bool { return L+d != L }).Draw(t, "length_delta")
	}
	p := string(b)
	in.Index.Pattern, in.Index.Active = &p, nil
	return in
}

// stateBadActive breaks the explicit active list: a negative layer, one
// past L, a repeat, or a list that leaves out layer 0.
func stateBadActive(t *rapid.T, in spec.TransferStateLayerPairingInput) Bad[spec.TransferStateLayerPairingInput] {
	L := in.Index.NumHiddenLayers
	a := []int64{0}
	for l := int64(1); l < L; l++ {
		if rapid.Bool().Draw(t, "active") {
			a = append(a, l)
		}
	}
	in.Index.Pattern = nil
	want := spec.ErrBadIndexPattern
	switch rule := rapid.IntRange(0, 3).Draw(t, "active_rule"); {
	case rule == 0:
		a[rapid.IntRange(0, len(a)-1).Draw(t, "negative_at")] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_layer")
		want = spec.ErrNegative
	case rule == 1:
		a = append(a, L+rapid.Int64Range(0, 3).Draw(t, "past_L"))
	case rule == 2 && len(a) > 1:
		k := rapid.IntRange(1, len(a)-1).Draw(t, "repeat_at")
		a[k] = a[k-1]
	default:
		if len(a) > 1 {
			a = a[1:]
		} else {
			a = []int64{L}
		}
	}
	in.Index.Active = a
	return Bad[spec.TransferStateLayerPairingInput]{in, want}
}

// stateIdentityBroken makes the id multisets disagree: with pp_size 1 a
// decode buffer changes layer or is dropped, or prefill gains a buffer;
// with pp_size > 1 prefill gains a layer decode does not have.
func stateIdentityBroken(t *rapid.T, in spec.TransferStateLayerPairingInput) spec.TransferStateLayerPairingInput {
	fresh := rapid.Int64Range(500_000, 500_010).Draw(t, "fresh_id")
	add := func(r *spec.StateRegistration, l uint64) {
		r.Ptrs, r.ItemLens, r.LayerIDs = append(r.Ptrs, 0xbeef000), append(r.ItemLens, l), append(r.LayerIDs, fresh)
	}
	if in.PPSize > 1 {
		add(&in.Src, 4096)
		return in
	}
	switch rapid.IntRange(0, 2).Draw(t, "how") {
	case 0:
		in.Dst.LayerIDs[rapid.IntRange(0, len(in.Dst.LayerIDs)-1).Draw(t, "changed_at")] = fresh
	case 1:
		if n := len(in.Dst.Ptrs); n > 1 {
			in.Dst.Ptrs, in.Dst.ItemLens, in.Dst.LayerIDs = in.Dst.Ptrs[:n-1], in.Dst.ItemLens[:n-1], in.Dst.LayerIDs[:n-1]
			break
		}
		add(&in.Src, 4096)
	default:
		add(&in.Src, 4096)
	}
	return in
}

// stateNoSlot gives both sides one more buffer, for a target layer outside
// A (a shared layer or one past L).
func stateNoSlot(t *rapid.T, in spec.TransferStateLayerPairingInput) spec.TransferStateLayerPairingInput {
	a, err := ref.ActiveIndexLayers(*in.Index)
	if err != nil {
		panic(err) // stateDraw's configs are valid
	}
	l := rapid.Int64Range(1, spec.DraftLayerIDBase-1).Filter(func(l int64) bool {
		_, in := slices.BinarySearch(a, l)
		return !in
	}).Draw(t, "slotless_layer")
	for _, r := range []*spec.StateRegistration{&in.Src, &in.Dst} {
		r.Ptrs, r.ItemLens, r.LayerIDs = append(r.Ptrs, 0xf00d000), append(r.ItemLens, 4096), append(r.LayerIDs, l)
	}
	return in
}

// stateBoundary: empty and single-buffer registrations, L = 1, all-F and
// one-F patterns, ids on both sides of the draft base (the largest legal L
// is DraftLayerIDBase), pp_size 1 and 2 on identical lists, and §6's worked
// examples, including the one ref must reject.
func stateBoundary() []Case[spec.TransferStateLayerPairingInput] {
	type in = spec.TransferStateLayerPairingInput
	pat := func(p string) *spec.IndexConfig {
		return &spec.IndexConfig{NumHiddenLayers: int64(len(p)), Pattern: &p}
	}
	glm := &spec.HostCapacityTerms{KVBytesPerTokenPerLayer: 656, IndexBytesPerTokenPerLayer: 132}
	fsss := pat("FSSSFSSS")
	fsss.Capacity = glm
	none := spec.StateRegistration{}
	return []Case[in]{
		{"positional-no-buffers", in{PPSize: 1, Src: none, Dst: none}},
		{"positional-one-buffer", in{PPSize: 1, Src: posReg(1), Dst: posReg(1)}},
		{"positional-with-index", in{PPSize: 1, Src: posReg(3), Dst: posReg(3), Index: pat("FSF")}},
		{"one-buffer", in{PPSize: 1, Src: idReg(0), Dst: idReg(0), Index: pat("F")}},
		{"L1-draft-only", in{PPSize: 1, Src: idReg(1_000_000), Dst: idReg(1_000_000), Index: pat("F")}},
		{"all-F", in{PPSize: 1, Src: idReg(0, 1, 2, 3), Dst: idReg(3, 2, 1, 0), Index: pat("FFFF")}},
		{"one-F", in{PPSize: 1, Src: idReg(0, 1_000_000), Dst: idReg(0, 1_000_000), Index: pat("FSSS")}},
		{"largest-L-ids-straddle-draft-base", in{PPSize: 1, Src: idReg(999_999, 1_000_000, 0), Dst: idReg(0, 999_999, 1_000_000),
			Index: &spec.IndexConfig{NumHiddenLayers: spec.DraftLayerIDBase, Active: []int64{0, 999_999}, Capacity: glm}}},
		{"pp1-identical-lists", in{PPSize: 1, Src: idReg(0, 4, 0, 4), Dst: idReg(0, 4, 0, 4)}},
		// The shortest active list out of order in its first pair (a reach
		// class of issue 30): [0, 0] repeats layer 0.
		{"active-first-pair-repeated", in{PPSize: 1, Src: idReg(0), Dst: idReg(0), Index: &spec.IndexConfig{NumHiddenLayers: 2, Active: []int64{0, 0}}}},
		{"pp2-identical-lists", in{PPSize: 2, Src: idReg(0, 4, 0, 4), Dst: idReg(0, 4, 0, 4)}},
		{"pp2-draft-only-stage", in{PPSize: 2, Src: idReg(1_000_000), Dst: idReg(0, 4, 1_000_000)}},
		{"spec-example-FSSSFSSS", in{PPSize: 1, Src: idReg(0, 4), Dst: idReg(0, 4), Index: fsss}},
		{"spec-example-0-4-vs-4-0", in{PPSize: 1, Src: idReg(0, 4), Dst: idReg(4, 0)}},
		{"spec-example-pp2-repeated-ids", in{PPSize: 2, Src: idReg(3, 7, 3, 7), Dst: idReg(3, 7, 11, 3, 7, 11)}},
		{"spec-example-0-4-8-vs-0-4-12", in{PPSize: 1, Src: idReg(0, 4, 8), Dst: idReg(0, 4, 12)}},
		// Rule 1 pairs buffer i with buffer i, so their item lens must agree.
		{"positional-item-len-differs", in{PPSize: 1, Src: posReg(2), Dst: func() spec.StateRegistration {
			r := posReg(2)
			r.ItemLens[1]++
			return r
		}()}},
		// With pp_size 2 decode may hold layers prefill does not; its
		// layer 1 is not an index layer of "FS", so it has no slot.
		{"pp2-dst-only-layer-no-slot", in{PPSize: 2, Src: idReg(0), Dst: idReg(0, 1), Index: pat("FS")}},
	}
}

// stateRegressions: §6's count-only pairing wrote layer 8's index into
// decode's layer-12 slot where the fix raises; §6.1's estimate on FSSSFSSS
// counts 2 index layers, the old one 8.
func stateRegressions() []Case[spec.TransferStateLayerPairingInput] {
	p := "FSSSFSSS"
	return []Case[spec.TransferStateLayerPairingInput]{
		{"state-layers-paired-by-count", spec.TransferStateLayerPairingInput{PPSize: 1, Src: idReg(0, 4, 8), Dst: idReg(0, 4, 12)}},
		{"index-bytes-use-all-layers", spec.TransferStateLayerPairingInput{PPSize: 1, Src: idReg(0, 4), Dst: idReg(0, 4),
			Index: &spec.IndexConfig{NumHiddenLayers: 8, Pattern: &p,
				Capacity: &spec.HostCapacityTerms{KVBytesPerTokenPerLayer: 656, IndexBytesPerTokenPerLayer: 132}}}},
	}
}

// idReg registers one 64-page index buffer per id.
func idReg(ids ...int64) spec.StateRegistration {
	r := posReg(len(ids))
	r.LayerIDs = ids
	return r
}

// posReg registers n buffers without layer ids.
func posReg(n int) spec.StateRegistration {
	r := spec.StateRegistration{Ptrs: []uint64{}, ItemLens: []uint64{}}
	for k := range n {
		r.Ptrs, r.ItemLens = append(r.Ptrs, 0x10000*uint64(k+1)), append(r.ItemLens, 64*132)
	}
	return r
}

// stateBijection is §6 "pairing is a bijection onto its image": one pair
// per src buffer, in src order, onto distinct dst buffers; with pp_size 1
// the image is every dst buffer.
func stateBijection(_ spec.Limits, in spec.TransferStateLayerPairingInput, out spec.TransferStateLayerPairingOutput) error {
	if len(out.Pairs) != len(in.Src.Ptrs) {
		return fmt.Errorf("%d pairs for %d src buffers", len(out.Pairs), len(in.Src.Ptrs))
	}
	seen := make([]bool, len(in.Dst.Ptrs))
	for i, p := range out.Pairs {
		if p.Src != i || p.Dst < 0 || p.Dst >= len(seen) || seen[p.Dst] {
			return fmt.Errorf("pair %d = %+v: not src %d onto a fresh dst in [0,%d)", i, p, i, len(seen))
		}
		seen[p.Dst] = true
	}
	if (in.PPSize == 1 || out.Positional) && len(out.Pairs) != len(seen) {
		return fmt.Errorf("pp_size %d: %d pairs do not cover %d dst buffers", in.PPSize, len(out.Pairs), len(seen))
	}
	return nil
}

// statePairsJoinEqualIDs is §6 "id(src[i]) == id(dst[pair(i)])", with the
// pair's item_len that of both buffers (rule 5); without ids (rule 1) the
// pairing is positional.
func statePairsJoinEqualIDs(_ spec.Limits, in spec.TransferStateLayerPairingInput, out spec.TransferStateLayerPairingOutput) error {
	legacy := len(in.Src.LayerIDs) == 0 && len(in.Dst.LayerIDs) == 0
	if out.Positional != legacy {
		return fmt.Errorf("positional = %v, but ids given on neither side is %v", out.Positional, legacy)
	}
	for i, p := range out.Pairs {
		switch {
		case legacy && p.Dst != i:
			return fmt.Errorf("positional pair %d goes to dst %d", i, p.Dst)
		case !legacy && in.Src.LayerIDs[i] != in.Dst.LayerIDs[p.Dst]:
			return fmt.Errorf("pair %d: src layer %d -> dst layer %d", i, in.Src.LayerIDs[i], in.Dst.LayerIDs[p.Dst])
		case p.ItemLen != in.Src.ItemLens[i] || p.ItemLen != in.Dst.ItemLens[p.Dst]:
			return fmt.Errorf("pair %d: item_len %d, src %d, dst %d", i, p.ItemLen, in.Src.ItemLens[i], in.Dst.ItemLens[p.Dst])
		}
	}
	return nil
}

// stateOccurrenceOrder is rule 5's "next unused dst with the same id": the
// k-th src buffer of a layer is paired with the k-th dst buffer of it, which
// is what keeps K and V groups (or target and draft) matched.
func stateOccurrenceOrder(_ spec.Limits, in spec.TransferStateLayerPairingInput, out spec.TransferStateLayerPairingOutput) error {
	if out.Positional {
		return nil
	}
	for i, p := range out.Pairs {
		id := in.Src.LayerIDs[i]
		if a, b := occurrence(in.Src.LayerIDs, i), occurrence(in.Dst.LayerIDs, p.Dst); a != b {
			return fmt.Errorf("layer %d: src occurrence %d paired with dst occurrence %d", id, a, b)
		}
	}
	return nil
}

// occurrence counts the ids before k equal to ids[k].
func occurrence(ids []int64, k int) int {
	n := 0
	for _, id := range ids[:k] {
		if id == ids[k] {
			n++
		}
	}
	return n
}

// statePermutationInvariance is §6 "the result does not depend on buffer
// order": reordering each side's buffers (keeping same-id buffers in their
// relative order, the only freedom rule 5 leaves) pairs the same buffers
// and gives each buffer the same slot. Prefill is reversed by layer and
// decode sorted by layer, so the check is never the identity on both.
func statePermutationInvariance(lim spec.Limits, in spec.TransferStateLayerPairingInput, out spec.TransferStateLayerPairingOutput) error {
	if out.Positional {
		return nil
	}
	ps, src := permuteByID(in.Src, -1)
	pd, dst := permuteByID(in.Dst, 1)
	x := in
	x.Src, x.Dst = src, dst
	got, err := ref.TransferStateLayerPairing(lim, x)
	if err != nil {
		return fmt.Errorf("ref rejected the reordered input: %v", err)
	}
	for i, p := range out.Pairs {
		if q := got.Pairs[ps[i]]; q.Dst != pd[p.Dst] || q.ItemLen != p.ItemLen {
			return fmt.Errorf("src %d -> dst %d, but after reordering src %d -> dst %d (want %d)", i, p.Dst, ps[i], q.Dst, pd[p.Dst])
		}
	}
	for i, s := range out.SrcSlots {
		if got.SrcSlots[ps[i]] != s {
			return fmt.Errorf("src %d: slot %d, after reordering %d", i, s, got.SrcSlots[ps[i]])
		}
	}
	for j, s := range out.DstSlots {
		if got.DstSlots[pd[j]] != s {
			return fmt.Errorf("dst %d: slot %d, after reordering %d", j, s, got.DstSlots[pd[j]])
		}
	}
	return nil
}

// permuteByID stably sorts r's buffers by layer id (dir 1 ascending, −1
// descending) and returns where each old buffer went.
func permuteByID(r spec.StateRegistration, dir int) ([]int, spec.StateRegistration) {
	order := make([]int, len(r.LayerIDs))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return dir * cmpInt64(r.LayerIDs[a], r.LayerIDs[b]) })
	where := make([]int, len(order))
	p := spec.StateRegistration{Ptrs: make([]uint64, len(order)), ItemLens: make([]uint64, len(order)), LayerIDs: make([]int64, len(order))}
	for k, from := range order {
		where[from] = k
		p.Ptrs[k], p.ItemLens[k], p.LayerIDs[k] = r.Ptrs[from], r.ItemLens[from], r.LayerIDs[from]
	}
	return where, p
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// stateSlots is §6.1: A is the F layers of the pattern (or the given set),
// starting at layer 0; slot(l) is l's rank in A, so strictly increasing on
// A; draft id base+j sits after A at |A|+j. Without an index config there
// are no slots.
func stateSlots(_ spec.Limits, in spec.TransferStateLayerPairingInput, out spec.TransferStateLayerPairingOutput) error {
	if in.Index == nil {
		if out.Active != nil || out.SrcSlots != nil || out.DstSlots != nil || out.HostBytesPerToken != nil {
			return fmt.Errorf("index outputs without an index config: %+v", out)
		}
		return nil
	}
	want := in.Index.Active
	if p := in.Index.Pattern; p != nil {
		want = nil
		for l, c := range *p {
			if c == 'F' {
				want = append(want, int64(l))
			}
		}
	}
	if !slices.Equal(out.Active, want) || len(want) == 0 || want[0] != 0 {
		return fmt.Errorf("active = %v, want %v starting at layer 0", out.Active, want)
	}
	for _, side := range []struct {
		ids, slots []int64
	}{{in.Src.LayerIDs, out.SrcSlots}, {in.Dst.LayerIDs, out.DstSlots}} {
		if len(side.slots) != len(side.ids) {
			return fmt.Errorf("%d slots for %d ids", len(side.slots), len(side.ids))
		}
		for k, id := range side.ids {
			s := side.slots[k]
			if id >= spec.DraftLayerIDBase && s != int64(len(want))+id-spec.DraftLayerIDBase {
				return fmt.Errorf("draft layer %d: slot %d, want |A| + %d", id, s, id-spec.DraftLayerIDBase)
			}
			if id < spec.DraftLayerIDBase && (s < 0 || s >= int64(len(want)) || want[s] != id) {
				return fmt.Errorf("layer %d: slot %d is not its rank in A %v", id, s, want)
			}
		}
	}
	return nil
}

// stateHostEstimate is §6.1's capacity rule as an inequality that does not
// restate the formula: KV is stored for every layer and the index for the
// active ones only, so L×kv <= estimate <= L×(kv+index), with the upper
// bound reached only when every layer is active or the index is free (the
// full-layer estimate the seed fixed reaches it always).
func stateHostEstimate(_ spec.Limits, in spec.TransferStateLayerPairingInput, out spec.TransferStateLayerPairingOutput) error {
	if in.Index == nil || in.Index.Capacity == nil {
		if out.HostBytesPerToken != nil {
			return fmt.Errorf("host_bytes_per_token %d without capacity terms", *out.HostBytesPerToken)
		}
		return nil
	}
	if out.HostBytesPerToken == nil {
		return fmt.Errorf("no host_bytes_per_token for capacity terms %+v", *in.Index.Capacity)
	}
	L, c, got := in.Index.NumHiddenLayers, in.Index.Capacity, *out.HostBytesPerToken
	perLayer := c.KVBytesPerTokenPerLayer + c.IndexBytesPerTokenPerLayer
	if spec.AddOverflows(c.KVBytesPerTokenPerLayer, c.IndexBytesPerTokenPerLayer) || spec.MulOverflows(L, perLayer) {
		return nil // the full-layer bound is not representable; nothing to compare with
	}
	lo, hi := L*c.KVBytesPerTokenPerLayer, L*perLayer
	full := int64(len(out.Active)) == L || c.IndexBytesPerTokenPerLayer == 0
	if got < lo || got > hi || (got == hi) != full {
		return fmt.Errorf("estimate %d outside [L×kv=%d, L×(kv+index)=%d] or at the top with |A|=%d < L=%d", got, lo, hi, len(out.Active), L)
	}
	return nil
}

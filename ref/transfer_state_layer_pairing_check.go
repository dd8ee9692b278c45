package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for transfer.state_layer_pairing (docs/spec/transfer.md §6): config, registrations and rejections.

// CheckStateLayerConfig checks pp_size and the index config (docs/spec/transfer.md
// §6.1) and resolves A and the host capacity estimate; the plan is zero when
// no index config is given. Order: pp_size; num_hidden_layers; exactly one
// of pattern/active; the pattern's charset, first layer, length (or the
// active list's elements, then layer 0); the capacity terms.
func CheckStateLayerConfig(in spec.TransferStateLayerPairingInput) (spec.IndexPlan, error) {
	if in.PPSize < 1 {
		return spec.IndexPlan{}, spec.Reject(spec.ErrBadPPSize, "pp_size", in.PPSize, ">= 1")
	}
	if in.Index == nil {
		return spec.IndexPlan{}, nil
	}
	active, err := ActiveIndexLayers(*in.Index)
	if err != nil {
		return spec.IndexPlan{}, err
	}
	plan := spec.IndexPlan{Active: active}
	if c := in.Index.Capacity; c != nil {
		b, err := HostBytesPerToken(in.Index.NumHiddenLayers, int64(len(active)), *c)
		if err != nil {
			return spec.IndexPlan{}, err
		}
		plan.HostBytesPerToken = &b
	}
	return plan, nil
}

// CheckStateRegistrations checks the registrations' shape, docs/spec/transfer.md §6.2
// rules 1–3 in order, plus non-negative layer ids, and reports whether the
// legacy positional pairing applies. Order: item_lens parallel to ptrs (src,
// then dst); rule 1's count check; rule 2; rule 3 (src, then dst); ids >= 0
// (src, then dst). Rules 4–5 are the pairing itself.
func CheckStateRegistrations(in spec.TransferStateLayerPairingInput) (positional bool, err error) {
	src, dst := in.Src, in.Dst
	for _, side := range []struct {
		name string
		r    spec.StateRegistration
	}{{"src", src}, {"dst", dst}} {
		if len(side.r.ItemLens) != len(side.r.Ptrs) {
			return false, spec.Reject(spec.ErrLengthMismatch, side.name+".item_lens", len(side.r.ItemLens),
				fmt.Sprintf("== len(%s.ptrs) (%d)", side.name, len(side.r.Ptrs)))
		}
	}
	ns, nd := len(src.LayerIDs), len(dst.LayerIDs)
	switch {
	case ns == 0 && nd == 0:
		if len(src.Ptrs) != len(dst.Ptrs) {
			return false, spec.Reject(spec.ErrStateCountMismatch, "dst.ptrs", len(dst.Ptrs),
				fmt.Sprintf("== len(src.ptrs) (%d) when neither peer sends layer_ids", len(src.Ptrs)))
		}
		return true, nil
	case ns == 0:
		return false, spec.Reject(spec.ErrLayerIDsOneSided, "src.layer_ids", 0, fmt.Sprintf("non-empty, as dst.layer_ids (%d ids)", nd))
	case nd == 0:
		return false, spec.Reject(spec.ErrLayerIDsOneSided, "dst.layer_ids", 0, fmt.Sprintf("non-empty, as src.layer_ids (%d ids)", ns))
	}
	for _, side := range []struct {
		name string
		r    spec.StateRegistration
	}{{"src", src}, {"dst", dst}} {
		if len(side.r.LayerIDs) != len(side.r.Ptrs) {
			return false, spec.Reject(spec.ErrLayerIDsLength, side.name+".layer_ids", len(side.r.LayerIDs),
				fmt.Sprintf("== len(%s.ptrs) (%d)", side.name, len(side.r.Ptrs)))
		}
	}
	if err := CheckNonNegative("src.layer_ids", src.LayerIDs); err != nil {
		return false, err
	}
	return false, CheckNonNegative("dst.layer_ids", dst.LayerIDs)
}

// RejectIdentity builds rule 4's rejection from the two differences, each
// sorted ascending with multiplicity.
func RejectIdentity(ppSize int, prefillOnly, decodeOnly []int64) error {
	bound := "multiset(src.layer_ids) == multiset(dst.layer_ids) (pp_size == 1)"
	if ppSize > 1 {
		bound = fmt.Sprintf("multiset(src.layer_ids) ⊆ multiset(dst.layer_ids) (pp_size == %d)", ppSize)
	}
	return spec.Reject(spec.ErrStateLayerIdentityMismatch, "src.layer_ids",
		stateLayerIdentityMismatch{PrefillOnly: prefillOnly, DecodeOnly: decodeOnly}, bound)
}

// RejectItemLen builds rule 5's rejection for src buffer i paired with dst buffer j.
func RejectItemLen(in spec.TransferStateLayerPairingInput, i, j int) error {
	return spec.Reject(spec.ErrItemLenMismatch, spec.Idx("dst.item_lens", j), in.Dst.ItemLens[j],
		fmt.Sprintf("== src.item_lens[%d] (%d), its paired buffer", i, in.Src.ItemLens[i]))
}

// RejectNoSlot is the rejection of a target layer id outside A.
func RejectNoSlot(field string, k int, id int64, numActive int) error {
	return spec.Reject(spec.ErrNoIndexSlot, spec.Idx(field, k), id,
		fmt.Sprintf("an active index layer (|A| = %d) or a draft id >= %d", numActive, spec.DraftLayerIDBase))
}

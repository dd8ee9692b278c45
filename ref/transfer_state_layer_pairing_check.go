package ref

import "fmt"

// Validation for transfer.state_layer_pairing (docs/spec/transfer.md §6): config, registrations and rejections.

// Sentinels of transfer.state_layer_pairing (docs/spec/transfer.md §6).
var (
	// ErrBadPPSize: pp_size < 1.
	ErrBadPPSize = NewSentinel("bad_pp_size", "pp_size must be >= 1")
	// ErrStateCountMismatch: legacy positional pairing with different buffer
	// counts on the two sides (docs/spec/transfer.md §6.2 rule 1).
	ErrStateCountMismatch = NewSentinel("state_count_mismatch", "positional state pairing needs equal buffer counts")
	// ErrLayerIDsOneSided: only one peer sent layer ids (docs/spec/transfer.md §6.2 rule 2).
	ErrLayerIDsOneSided = NewSentinel("layer_ids_one_sided", "layer metadata must be provided by both PD peers or neither")
	// ErrLayerIDsLength: layer_ids is not parallel to ptrs (docs/spec/transfer.md §6.2 rule 3).
	ErrLayerIDsLength = NewSentinel("layer_ids_length", "layer_ids must name one logical layer per state buffer")
	// ErrStateLayerIdentityMismatch: the peers disagree on which logical
	// layers the state buffers hold; the value is a stateLayerIdentityMismatch
	// (docs/spec/transfer.md §6.2 rule 4).
	ErrStateLayerIdentityMismatch = NewSentinel("state_layer_identity_mismatch", "prefill and decode disagree on state layer identity")
	// ErrBadIndexPattern: the index-topk pattern or active set is invalid;
	// the bound says why (docs/spec/transfer.md §6.1).
	ErrBadIndexPattern = NewSentinel("bad_index_pattern", "invalid index-topk pattern or active set")
	// ErrNoIndexSlot: a target layer id is not an active index layer, so it
	// has no index-cache slot (docs/spec/transfer.md §6.1).
	ErrNoIndexSlot = NewSentinel("no_index_slot", "layer has no index-cache slot")
)

// CheckStateLayerConfig checks pp_size and the index config (docs/spec/transfer.md
// §6.1) and resolves A and the host capacity estimate; the plan is zero when
// no index config is given. Order: pp_size; num_hidden_layers; exactly one
// of pattern/active; the pattern's charset, first layer, length (or the
// active list's elements, then layer 0); the capacity terms.
func CheckStateLayerConfig(in TransferStateLayerPairingInput) (IndexPlan, error) {
	if in.PPSize < 1 {
		return IndexPlan{}, Reject(ErrBadPPSize, "pp_size", in.PPSize, ">= 1")
	}
	if in.Index == nil {
		return IndexPlan{}, nil
	}
	active, err := ActiveIndexLayers(*in.Index)
	if err != nil {
		return IndexPlan{}, err
	}
	plan := IndexPlan{Active: active}
	if c := in.Index.Capacity; c != nil {
		b, err := HostBytesPerToken(in.Index.NumHiddenLayers, int64(len(active)), *c)
		if err != nil {
			return IndexPlan{}, err
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
func CheckStateRegistrations(in TransferStateLayerPairingInput) (positional bool, err error) {
	src, dst := in.Src, in.Dst
	for _, side := range []struct {
		name string
		r    StateRegistration
	}{{"src", src}, {"dst", dst}} {
		if len(side.r.ItemLens) != len(side.r.Ptrs) {
			return false, Reject(ErrLengthMismatch, side.name+".item_lens", len(side.r.ItemLens),
				fmt.Sprintf("== len(%s.ptrs) (%d)", side.name, len(side.r.Ptrs)))
		}
	}
	ns, nd := len(src.LayerIDs), len(dst.LayerIDs)
	switch {
	case ns == 0 && nd == 0:
		if len(src.Ptrs) != len(dst.Ptrs) {
			return false, Reject(ErrStateCountMismatch, "dst.ptrs", len(dst.Ptrs),
				fmt.Sprintf("== len(src.ptrs) (%d) when neither peer sends layer_ids", len(src.Ptrs)))
		}
		return true, nil
	case ns == 0:
		return false, Reject(ErrLayerIDsOneSided, "src.layer_ids", 0, fmt.Sprintf("non-empty, as dst.layer_ids (%d ids)", nd))
	case nd == 0:
		return false, Reject(ErrLayerIDsOneSided, "dst.layer_ids", 0, fmt.Sprintf("non-empty, as src.layer_ids (%d ids)", ns))
	}
	for _, side := range []struct {
		name string
		r    StateRegistration
	}{{"src", src}, {"dst", dst}} {
		if len(side.r.LayerIDs) != len(side.r.Ptrs) {
			return false, Reject(ErrLayerIDsLength, side.name+".layer_ids", len(side.r.LayerIDs),
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
	return Reject(ErrStateLayerIdentityMismatch, "src.layer_ids",
		stateLayerIdentityMismatch{PrefillOnly: prefillOnly, DecodeOnly: decodeOnly}, bound)
}

// RejectItemLen builds rule 5's rejection for src buffer i paired with dst buffer j.
func RejectItemLen(in TransferStateLayerPairingInput, i, j int) error {
	return Reject(ErrItemLenMismatch, Idx("dst.item_lens", j), in.Dst.ItemLens[j],
		fmt.Sprintf("== src.item_lens[%d] (%d), its paired buffer", i, in.Src.ItemLens[i]))
}

// RejectNoSlot is the rejection of a target layer id outside A.
func RejectNoSlot(field string, k int, id int64, numActive int) error {
	return Reject(ErrNoIndexSlot, Idx(field, k), id,
		fmt.Sprintf("an active index layer (|A| = %d) or a draft id >= %d", numActive, DraftLayerIDBase))
}

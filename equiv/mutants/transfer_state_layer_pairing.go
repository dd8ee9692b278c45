package mutants

import (
	"slices"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// StateLayersPairedByCount is the design docs/spec/transfer.md §6.2 rejects: when
// both peers register as many state buffers, buffer i is taken to be buffer
// i's layer on the other side, so disagreeing layer sets (prefill [0,4,8],
// decode [0,4,12]) silently write layer 8's index into decode's layer-12
// slot, and reordered registrations ([0,4] vs [4,0]) cross layers. The twin
// is fast.TransferStateLayerPairing with the id match skipped on equal counts.
func StateLayersPairedByCount() equiv.Killable {
	return &equiv.Mutant[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
		Spec:    equiv.TransferStateLayerPairing(),
		ID:      "state-layers-paired-by-count",
		Section: "transfer.md §6.2",
		About:   "equal buffer counts pair i↔i, ignoring layer ids: mismatched layers are silently cross-written",
		Fn:      pairedByCount,
	}
}

func pairedByCount(lim spec.Limits, in spec.TransferStateLayerPairingInput) (spec.TransferStateLayerPairingOutput, error) {
	plan, err := ref.CheckStateLayerConfig(in)
	if err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	positional, err := ref.CheckStateRegistrations(in)
	if err != nil || positional || len(in.Src.Ptrs) != len(in.Dst.Ptrs) {
		return fast.TransferStateLayerPairing(lim, in)
	}
	// The bug: equal counts, so pair positionally as if no ids were sent.
	byCount := in
	byCount.Src.LayerIDs, byCount.Dst.LayerIDs, byCount.Index = nil, nil, nil
	out, err := fast.TransferStateLayerPairing(lim, byCount)
	out.Positional = false
	if err != nil || in.Index == nil {
		return out, err
	}
	out.Active, out.HostBytesPerToken = plan.Active, plan.HostBytesPerToken
	if out.SrcSlots, err = rankSlots("src.layer_ids", in.Src.LayerIDs, plan.Active); err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	if out.DstSlots, err = rankSlots("dst.layer_ids", in.Dst.LayerIDs, plan.Active); err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	return out, nil
}

// rankSlots is fast's slot lookup, unchanged: the bug is in the pairing.
func rankSlots(field string, ids, active []int64) ([]int64, error) {
	s := make([]int64, len(ids))
	for k, id := range ids {
		if id >= spec.DraftLayerIDBase {
			s[k] = int64(len(active)) + id - spec.DraftLayerIDBase
			continue
		}
		r, ok := slices.BinarySearch(active, id)
		if !ok {
			return nil, ref.RejectNoSlot(field, k, id, len(active))
		}
		s[k] = int64(r)
	}
	return s, nil
}

// IndexBytesUseAllLayers is docs/spec/transfer.md §6.1's estimate bug from the seed:
// the HiCache host bytes per token counted an index cache for every target
// layer (L×kv + L×index), keeping host capacity artificially low after
// index skip compacted the index buffers to the active layers.
func IndexBytesUseAllLayers() equiv.Killable {
	return &equiv.Mutant[spec.TransferStateLayerPairingInput, spec.TransferStateLayerPairingOutput]{
		Spec:    equiv.TransferStateLayerPairing(),
		ID:      "index-bytes-use-all-layers",
		Section: "transfer.md §6.1",
		About:   "host bytes per token counts index bytes for all L layers instead of the |A| active ones",
		Fn: func(lim spec.Limits, in spec.TransferStateLayerPairingInput) (spec.TransferStateLayerPairingOutput, error) {
			out, err := fast.TransferStateLayerPairing(lim, in)
			if err != nil || in.Index == nil || in.Index.Capacity == nil {
				return out, err
			}
			L := in.Index.NumHiddenLayers
			b, err := ref.HostBytesPerToken(L, L, *in.Index.Capacity) // the bug: L for both terms
			if err != nil {
				return spec.TransferStateLayerPairingOutput{}, err
			}
			out.HostBytesPerToken = &b
			return out, nil
		},
	}
}

package fast

import (
	"cmp"
	"slices"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferStateLayerPairing is the map-free twin of ref.TransferStateLayerPairing
// (docs/spec/transfer.md §6, §10 "slice-based pairing"). The config and shape checks
// are ref's. When both peers list the same ids in the same order — the usual
// registration — the pairing is i↔i after one compare of the lists.
// Otherwise each side's buffer indices are sorted by (id, index) and merged:
// equal-id runs then meet in occurrence order, which is exactly rule 5's
// "next unused dst with the same id", and the merge finds rule 4's
// differences already sorted. Slots are binary searches in A.
func TransferStateLayerPairing(_ spec.Limits, in spec.TransferStateLayerPairingInput) (spec.TransferStateLayerPairingOutput, error) {
	plan, err := ref.CheckStateLayerConfig(in)
	if err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	positional, err := ref.CheckStateRegistrations(in)
	if err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	out := spec.TransferStateLayerPairingOutput{Positional: positional, Pairs: make([]spec.StatePair, len(in.Src.Ptrs))}
	if positional || slices.Equal(in.Src.LayerIDs, in.Dst.LayerIDs) {
		for i := range out.Pairs {
			out.Pairs[i].Dst = i
		}
	} else if err := matchByLayerID(in, out.Pairs); err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	for i := range out.Pairs {
		j := out.Pairs[i].Dst
		if in.Src.ItemLens[i] != in.Dst.ItemLens[j] {
			return spec.TransferStateLayerPairingOutput{}, ref.RejectItemLen(in, i, j)
		}
		out.Pairs[i].Src, out.Pairs[i].ItemLen = i, in.Src.ItemLens[i]
	}
	if in.Index == nil {
		return out, nil
	}
	out.Active, out.HostBytesPerToken = plan.Active, plan.HostBytesPerToken
	ns := len(in.Src.LayerIDs)
	slots := make([]int64, ns+len(in.Dst.LayerIDs))
	out.SrcSlots, out.DstSlots = slots[:ns:ns], slots[ns:]
	if err := fillSlots(out.SrcSlots, "src.layer_ids", in.Src.LayerIDs, plan.Active); err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	if err := fillSlots(out.DstSlots, "dst.layer_ids", in.Dst.LayerIDs, plan.Active); err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	return out, nil
}

// matchByLayerID sets pairs[i].Dst for every src buffer i (rules 4–5), or
// returns rule 4's rejection.
func matchByLayerID(in spec.TransferStateLayerPairingInput, pairs []spec.StatePair) error {
	src, dst := in.Src.LayerIDs, in.Dst.LayerIDs
	ns, nd := len(src), len(dst)
	order := make([]int, ns+nd)
	so, do := sortedByID(order[:ns], src), sortedByID(order[ns:], dst)
	exact := in.PPSize == 1
	if exact && ns != nd {
		return identityMismatch(in.PPSize, src, dst, so, do)
	}
	j := 0
	for _, i := range so {
		// With pp_size > 1, decode ids below the current src id belong to
		// another prefill stage: skip them. With pp_size == 1 there are none.
		for j < nd && dst[do[j]] < src[i] && !exact {
			j++
		}
		if j == nd || dst[do[j]] != src[i] {
			return identityMismatch(in.PPSize, src, dst, so, do)
		}
		pairs[i].Dst = do[j]
		j++
	}
	return nil
}

// sortedByID fills o with 0..len(ids)-1 ordered by (ids[k], k) and returns it.
func sortedByID(o []int, ids []int64) []int {
	for k := range o {
		o[k] = k
	}
	slices.SortFunc(o, func(x, y int) int {
		if c := cmp.Compare(ids[x], ids[y]); c != 0 {
			return c
		}
		return x - y
	})
	return o
}

// identityMismatch merges the sorted id sequences once more to collect
// multiset(src) − multiset(dst) and, for pp_size == 1, multiset(dst) −
// multiset(src); the merge yields both already sorted.
func identityMismatch(ppSize int, src, dst []int64, so, do []int) error {
	prefillOnly, decodeOnly := []int64{}, []int64{}
	i, j := 0, 0
	for i < len(so) || j < len(do) {
		switch {
		case j == len(do) || (i < len(so) && src[so[i]] < dst[do[j]]):
			prefillOnly = append(prefillOnly, src[so[i]])
			i++
		case i == len(so) || dst[do[j]] < src[so[i]]:
			decodeOnly = append(decodeOnly, dst[do[j]])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	if ppSize > 1 {
		decodeOnly = []int64{}
	}
	return ref.RejectIdentity(ppSize, prefillOnly, decodeOnly)
}

// fillSlots writes each id's compact index slot into s: a target layer's
// rank in the ascending A, or |A|+j for draft id DraftLayerIDBase+j.
func fillSlots(s []int64, field string, ids, active []int64) error {
	na := int64(len(active))
	for k, id := range ids {
		if id >= spec.DraftLayerIDBase {
			s[k] = na + id - spec.DraftLayerIDBase // |A| <= L <= the base: no overflow
			continue
		}
		r, ok := slices.BinarySearch(active, id)
		if !ok {
			return ref.RejectNoSlot(field, k, id, len(active))
		}
		s[k] = int64(r)
	}
	return nil
}

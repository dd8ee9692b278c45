package ref

import (
	"fmt"
	"math"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// stateLayerIdentityMismatch is the value of an ErrStateLayerIdentityMismatch
// rejection: the ids, with multiplicity and sorted, that break rule 4.
type stateLayerIdentityMismatch struct {
	// PrefillOnly is multiset(src) − multiset(dst).
	PrefillOnly []int64 `json:"prefill_only"`
	// DecodeOnly is multiset(dst) − multiset(src) when pp_size == 1; with
	// pp_size > 1 decode may hold more layers than a prefill stage, so it is empty.
	DecodeOnly []int64 `json:"decode_only"`
}

// String renders the mismatch for error messages, e.g.
// "prefill_only=[8] decode_only=[12]".
func (m stateLayerIdentityMismatch) String() string {
	return fmt.Sprintf("prefill_only=%v decode_only=%v", m.PrefillOnly, m.DecodeOnly)
}

// ActiveIndexLayers validates cfg (all but Capacity) and returns A, the
// ascending layers that own an index cache (docs/spec/transfer.md §6.1).
func ActiveIndexLayers(cfg spec.IndexConfig) ([]int64, error) {
	L := cfg.NumHiddenLayers
	if L < 0 {
		return nil, spec.Reject(spec.ErrNegative, "index.num_hidden_layers", L, ">= 0")
	}
	// Target ids must stay below the draft id base, or a target layer and a
	// draft layer could share an id; it also keeps |A|+j, a draft's slot,
	// inside int64.
	if L > spec.DraftLayerIDBase {
		return nil, spec.Reject(spec.ErrBadIndexPattern, "index.num_hidden_layers", L,
			fmt.Sprintf("<= %d: target layer ids must stay below the draft id base", spec.DraftLayerIDBase))
	}
	switch hasPattern, hasActive := cfg.Pattern != nil, len(cfg.Active) > 0; {
	case hasPattern && hasActive:
		return nil, spec.Reject(spec.ErrBadIndexPattern, "index", "pattern and active", "exactly one of pattern and active")
	case !hasPattern && !hasActive:
		return nil, spec.Reject(spec.ErrBadIndexPattern, "index", "neither pattern nor active", "exactly one of pattern and active")
	case hasPattern:
		return activeFromPattern(*cfg.Pattern, L)
	default:
		return checkActiveList(cfg.Active, L)
	}
}

func activeFromPattern(p string, L int64) ([]int64, error) {
	for k := 0; k < len(p); k++ {
		if p[k] != 'F' && p[k] != 'S' {
			return nil, spec.Reject(spec.ErrBadIndexPattern, "index.pattern", p, fmt.Sprintf("only 'F' and 'S'; pattern[%d] is %q", k, p[k]))
		}
	}
	if len(p) == 0 || p[0] != 'F' {
		return nil, spec.Reject(spec.ErrBadIndexPattern, "index.pattern", p, "pattern[0] == 'F': layer 0 has no earlier layer to share from")
	}
	if int64(len(p)) != L {
		return nil, spec.Reject(spec.ErrBadIndexPattern, "index.pattern", p, fmt.Sprintf("len(pattern) == num_hidden_layers (%d)", L))
	}
	active := []int64{}
	for l := range len(p) {
		if p[l] == 'F' {
			active = append(active, int64(l))
		}
	}
	return active, nil
}

// checkActiveList holds an explicit A to the rules a pattern obeys: layers
// exist, each is named once (ascending, so A is canonical), and layer 0,
// which has nothing to share from, is active.
func checkActiveList(active []int64, L int64) ([]int64, error) {
	for k, l := range active {
		f := spec.Idx("index.active", k)
		switch {
		case l < 0:
			return nil, spec.Reject(spec.ErrNegative, f, l, ">= 0")
		case l >= L:
			return nil, spec.Reject(spec.ErrBadIndexPattern, f, l, fmt.Sprintf("< num_hidden_layers (%d)", L))
		case k > 0 && l <= active[k-1]:
			return nil, spec.Reject(spec.ErrBadIndexPattern, f, l, fmt.Sprintf("> index.active[%d] (%d): strictly ascending", k-1, active[k-1]))
		}
	}
	if active[0] != 0 {
		return nil, spec.Reject(spec.ErrBadIndexPattern, "index.active[0]", active[0], "== 0: layer 0 has no earlier layer to share from")
	}
	return slices.Clone(active), nil
}

// HostBytesPerToken is the HiCache host capacity estimate of docs/spec/transfer.md
// §6.1: MLA KV is kept for all L layers but the index only for the |A|
// active ones — L×kv + |A|×index. (The seed fixed an estimate that used L for
// both terms.) Preconditions: 0 <= numActive <= L.
func HostBytesPerToken(L, numActive int64, c spec.HostCapacityTerms) (int64, error) {
	const kvField, idxField = "index.capacity.kv_bytes_per_token_per_layer", "index.capacity.index_bytes_per_token_per_layer"
	kv, idx := c.KVBytesPerTokenPerLayer, c.IndexBytesPerTokenPerLayer
	if kv < 0 {
		return 0, spec.Reject(spec.ErrNegative, kvField, kv, ">= 0")
	}
	if idx < 0 {
		return 0, spec.Reject(spec.ErrNegative, idxField, idx, ">= 0")
	}
	if spec.MulOverflows(L, kv) {
		return 0, spec.Reject(spec.ErrOverflow, kvField, kv, fmt.Sprintf("num_hidden_layers (%d) × kv <= %d", L, int64(math.MaxInt64)))
	}
	if spec.MulOverflows(numActive, idx) {
		return 0, spec.Reject(spec.ErrOverflow, idxField, idx, fmt.Sprintf("|A| (%d) × index <= %d", numActive, int64(math.MaxInt64)))
	}
	if spec.AddOverflows(L*kv, numActive*idx) {
		return 0, spec.Reject(spec.ErrOverflow, idxField, idx, fmt.Sprintf("L×kv (%d) + |A|×index <= %d", L*kv, int64(math.MaxInt64)))
	}
	return L*kv + numActive*idx, nil
}

// TransferStateLayerPairing pairs prefill's state buffers with decode's by logical
// layer id (docs/spec/transfer.md §6.2) and maps each buffer's id to its compact index
// slot (§6.1). It fails fast when the peers disagree on which layers they
// hold: it never truncates and never pairs by count, which is the seed's
// reason for carrying layer ids at all.
func TransferStateLayerPairing(_ spec.Limits, in spec.TransferStateLayerPairingInput) (spec.TransferStateLayerPairingOutput, error) {
	plan, err := CheckStateLayerConfig(in)
	if err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	positional, err := CheckStateRegistrations(in)
	if err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	var out spec.TransferStateLayerPairingOutput
	if positional {
		out, err = pairPositionally(in)
	} else {
		out, err = pairByLayerID(in)
	}
	if err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	if in.Index == nil {
		return out, nil
	}
	out.Active, out.HostBytesPerToken = plan.Active, plan.HostBytesPerToken
	if out.SrcSlots, err = slotsOf("src.layer_ids", in.Src.LayerIDs, plan.Active); err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	if out.DstSlots, err = slotsOf("dst.layer_ids", in.Dst.LayerIDs, plan.Active); err != nil {
		return spec.TransferStateLayerPairingOutput{}, err
	}
	return out, nil
}

// pairPositionally is rule 1: buffer i with buffer i.
func pairPositionally(in spec.TransferStateLayerPairingInput) (spec.TransferStateLayerPairingOutput, error) {
	out := spec.TransferStateLayerPairingOutput{Positional: true, Pairs: []spec.StatePair{}}
	for i := range in.Src.Ptrs {
		if in.Src.ItemLens[i] != in.Dst.ItemLens[i] {
			return spec.TransferStateLayerPairingOutput{}, RejectItemLen(in, i, i)
		}
		out.Pairs = append(out.Pairs, spec.StatePair{Src: i, Dst: i, ItemLen: in.Src.ItemLens[i]})
	}
	return out, nil
}

// pairByLayerID is rules 4 and 5 with the multisets held as count maps and
// each id's dst buffers as a queue. Map iteration order never reaches the
// output: differences are collected by walking the id lists, then sorted.
func pairByLayerID(in spec.TransferStateLayerPairingInput) (spec.TransferStateLayerPairingOutput, error) {
	src, dst := in.Src.LayerIDs, in.Dst.LayerIDs
	unmatched := map[int64]int{}
	for _, id := range dst {
		unmatched[id]++
	}
	prefillOnly, decodeOnly := []int64{}, []int64{}
	for _, id := range src {
		if unmatched[id] > 0 {
			unmatched[id]--
		} else {
			prefillOnly = append(prefillOnly, id)
		}
	}
	for _, id := range dst {
		if unmatched[id] > 0 {
			unmatched[id]--
			decodeOnly = append(decodeOnly, id)
		}
	}
	if in.PPSize > 1 {
		decodeOnly = []int64{} // a prefill PP stage holds only some of decode's layers
	}
	if len(prefillOnly) > 0 || len(decodeOnly) > 0 {
		slices.Sort(prefillOnly)
		slices.Sort(decodeOnly)
		return spec.TransferStateLayerPairingOutput{}, RejectIdentity(in.PPSize, prefillOnly, decodeOnly)
	}
	queue := map[int64][]int{}
	for j, id := range dst {
		queue[id] = append(queue[id], j)
	}
	out := spec.TransferStateLayerPairingOutput{Pairs: []spec.StatePair{}}
	for i, id := range src {
		j := queue[id][0] // rule 4 guarantees one is left
		queue[id] = queue[id][1:]
		if in.Src.ItemLens[i] != in.Dst.ItemLens[j] {
			return spec.TransferStateLayerPairingOutput{}, RejectItemLen(in, i, j)
		}
		out.Pairs = append(out.Pairs, spec.StatePair{Src: i, Dst: j, ItemLen: in.Src.ItemLens[i]})
	}
	return out, nil
}

// slotsOf maps each id to its compact index slot: a target layer l to its
// rank in A, draft layer DraftLayerIDBase+j to |A|+j (docs/spec/transfer.md §6.1).
func slotsOf(field string, ids, active []int64) ([]int64, error) {
	rank := map[int64]int64{}
	for r, l := range active {
		rank[l] = int64(r)
	}
	numActive := int64(len(active))
	slots := []int64{}
	for k, id := range ids {
		if id >= spec.DraftLayerIDBase {
			// |A| <= L <= DraftLayerIDBase, so |A| + j cannot overflow.
			slots = append(slots, numActive+id-spec.DraftLayerIDBase)
			continue
		}
		r, ok := rank[id]
		if !ok {
			return nil, RejectNoSlot(field, k, id, len(active))
		}
		slots = append(slots, r)
	}
	return slots, nil
}

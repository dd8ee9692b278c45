package ref

import (
	"fmt"
	"math"
	"slices"
)

// DraftLayerIDBase is the logical layer id of the first draft layer: draft
// layer j registers id DraftLayerIDBase+j (docs/spec/transfer.md §6.2, [designed],
// following upstream's draft-KV id base).
const DraftLayerIDBase int64 = 1_000_000

// StateRegistration is one peer's registration of a state component
// (docs/spec/transfer.md §6.2): parallel lists, one entry per state buffer.
type StateRegistration struct {
	// Ptrs are the buffers' base addresses, in buffer order.
	Ptrs []uint64 `json:"ptrs"`
	// ItemLens are the buffers' bytes per page; len(ItemLens) == len(Ptrs).
	ItemLens []uint64 `json:"item_lens"`
	// LayerIDs are the buffers' logical layer ids (target layers first, then
	// draft ids DraftLayerIDBase+j), or empty for legacy positional pairing.
	LayerIDs []int64 `json:"layer_ids"`
}

// HostCapacityTerms are the per-layer byte sizes of the HiCache host
// capacity estimate (docs/spec/transfer.md §6.1).
type HostCapacityTerms struct {
	// KVBytesPerTokenPerLayer is the MLA KV bytes per token of one layer;
	// KV exists for every layer.
	KVBytesPerTokenPerLayer int64 `json:"kv_bytes_per_token_per_layer"`
	// IndexBytesPerTokenPerLayer is the NSA index bytes per token of one
	// active layer.
	IndexBytesPerTokenPerLayer int64 `json:"index_bytes_per_token_per_layer"`
}

// IndexConfig says which layers own an NSA index cache (docs/spec/transfer.md §6.1).
// Exactly one of Pattern and Active is given.
type IndexConfig struct {
	// NumHiddenLayers is L, the target model's layer count, in [0, DraftLayerIDBase].
	NumHiddenLayers int64 `json:"num_hidden_layers"`
	// Pattern has one character per layer: 'F' (owns an index cache) or 'S'
	// (shares the previous F layer's top-k); Pattern[0] must be 'F'.
	Pattern *string `json:"pattern,omitempty"`
	// Active is an already-computed active set A, strictly ascending, in
	// [0, L), containing layer 0. Empty means not given.
	Active []int64 `json:"active,omitempty"`
	// Capacity, when given, asks for the host bytes-per-token estimate.
	Capacity *HostCapacityTerms `json:"capacity,omitempty"`
}

// TransferStateLayerPairingInput is the input of transfer.state_layer_pairing (docs/spec/transfer.md §6).
type TransferStateLayerPairingInput struct {
	// PPSize is the prefill pipeline-parallel size, >= 1; above 1 a prefill
	// stage holds a subset of decode's layers.
	PPSize int `json:"pp_size"`
	// Src is the prefill side's registration.
	Src StateRegistration `json:"src"`
	// Dst is the decode side's registration.
	Dst StateRegistration `json:"dst"`
	// Index, when given, maps each buffer's logical id to its compact slot.
	Index *IndexConfig `json:"index,omitempty"`
}

// StatePair is one transfer entry (docs/spec/transfer.md §6.2 rule 6): src buffer
// Src is written to dst buffer Dst, ItemLen bytes per page.
type StatePair struct {
	// Src is the index into the prefill registration.
	Src int `json:"src"`
	// Dst is the index into the decode registration.
	Dst int `json:"dst"`
	// ItemLen is the common item_len of both buffers.
	ItemLen uint64 `json:"item_len"`
}

// TransferStateLayerPairingOutput is the pairing and, when an index config is
// given, the compact slots (docs/spec/transfer.md §6). The index outputs are null
// when no index config is given.
type TransferStateLayerPairingOutput struct {
	// Positional reports that both peers omitted layer ids, so the legacy
	// i↔i pairing was used.
	Positional bool `json:"positional"`
	// Pairs has one entry per src buffer, in src order.
	Pairs []StatePair `json:"pairs"`
	// Active is A, the ascending active index layers.
	Active []int64 `json:"active"`
	// SrcSlots[i] is the compact index slot of src buffer i's logical id.
	SrcSlots []int64 `json:"src_slots"`
	// DstSlots[j] is the compact index slot of dst buffer j's logical id.
	DstSlots []int64 `json:"dst_slots"`
	// HostBytesPerToken is L×kv + |A|×index, when capacity terms are given.
	HostBytesPerToken *int64 `json:"host_bytes_per_token"`
}

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

// IndexPlan is the checked index configuration: A, and the host capacity
// estimate when asked for.
type IndexPlan struct {
	// Active is A, ascending.
	Active []int64
	// HostBytesPerToken is L×kv + |A|×index, or nil.
	HostBytesPerToken *int64
}

// ActiveIndexLayers validates cfg (all but Capacity) and returns A, the
// ascending layers that own an index cache (docs/spec/transfer.md §6.1).
func ActiveIndexLayers(cfg IndexConfig) ([]int64, error) {
	L := cfg.NumHiddenLayers
	if L < 0 {
		return nil, Reject(ErrNegative, "index.num_hidden_layers", L, ">= 0")
	}
	// Target ids must stay below the draft id base, or a target layer and a
	// draft layer could share an id; it also keeps |A|+j, a draft's slot,
	// inside int64.
	if L > DraftLayerIDBase {
		return nil, Reject(ErrBadIndexPattern, "index.num_hidden_layers", L,
			fmt.Sprintf("<= %d: target layer ids must stay below the draft id base", DraftLayerIDBase))
	}
	switch hasPattern, hasActive := cfg.Pattern != nil, len(cfg.Active) > 0; {
	case hasPattern && hasActive:
		return nil, Reject(ErrBadIndexPattern, "index", "pattern and active", "exactly one of pattern and active")
	case !hasPattern && !hasActive:
		return nil, Reject(ErrBadIndexPattern, "index", "neither pattern nor active", "exactly one of pattern and active")
	case hasPattern:
		return activeFromPattern(*cfg.Pattern, L)
	default:
		return checkActiveList(cfg.Active, L)
	}
}

func activeFromPattern(p string, L int64) ([]int64, error) {
	for k := 0; k < len(p); k++ {
		if p[k] != 'F' && p[k] != 'S' {
			return nil, Reject(ErrBadIndexPattern, "index.pattern", p, fmt.Sprintf("only 'F' and 'S'; pattern[%d] is %q", k, p[k]))
		}
	}
	if len(p) == 0 || p[0] != 'F' {
		return nil, Reject(ErrBadIndexPattern, "index.pattern", p, "pattern[0] == 'F': layer 0 has no earlier layer to share from")
	}
	if int64(len(p)) != L {
		return nil, Reject(ErrBadIndexPattern, "index.pattern", p, fmt.Sprintf("len(pattern) == num_hidden_layers (%d)", L))
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
		f := Idx("index.active", k)
		switch {
		case l < 0:
			return nil, Reject(ErrNegative, f, l, ">= 0")
		case l >= L:
			return nil, Reject(ErrBadIndexPattern, f, l, fmt.Sprintf("< num_hidden_layers (%d)", L))
		case k > 0 && l <= active[k-1]:
			return nil, Reject(ErrBadIndexPattern, f, l, fmt.Sprintf("> index.active[%d] (%d): strictly ascending", k-1, active[k-1]))
		}
	}
	if active[0] != 0 {
		return nil, Reject(ErrBadIndexPattern, "index.active[0]", active[0], "== 0: layer 0 has no earlier layer to share from")
	}
	return slices.Clone(active), nil
}

// HostBytesPerToken is the HiCache host capacity estimate of docs/spec/transfer.md
// §6.1: MLA KV is kept for all L layers but the index only for the |A|
// active ones — L×kv + |A|×index. (The seed fixed an estimate that used L for
// both terms.) Preconditions: 0 <= numActive <= L.
func HostBytesPerToken(L, numActive int64, c HostCapacityTerms) (int64, error) {
	const kvField, idxField = "index.capacity.kv_bytes_per_token_per_layer", "index.capacity.index_bytes_per_token_per_layer"
	kv, idx := c.KVBytesPerTokenPerLayer, c.IndexBytesPerTokenPerLayer
	if kv < 0 {
		return 0, Reject(ErrNegative, kvField, kv, ">= 0")
	}
	if idx < 0 {
		return 0, Reject(ErrNegative, idxField, idx, ">= 0")
	}
	if MulOverflows(L, kv) {
		return 0, Reject(ErrOverflow, kvField, kv, fmt.Sprintf("num_hidden_layers (%d) × kv <= %d", L, int64(math.MaxInt64)))
	}
	if MulOverflows(numActive, idx) {
		return 0, Reject(ErrOverflow, idxField, idx, fmt.Sprintf("|A| (%d) × index <= %d", numActive, int64(math.MaxInt64)))
	}
	if AddOverflows(L*kv, numActive*idx) {
		return 0, Reject(ErrOverflow, idxField, idx, fmt.Sprintf("L×kv (%d) + |A|×index <= %d", L*kv, int64(math.MaxInt64)))
	}
	return L*kv + numActive*idx, nil
}

// TransferStateLayerPairing pairs prefill's state buffers with decode's by logical
// layer id (docs/spec/transfer.md §6.2) and maps each buffer's id to its compact index
// slot (§6.1). It fails fast when the peers disagree on which layers they
// hold: it never truncates and never pairs by count, which is the seed's
// reason for carrying layer ids at all.
func TransferStateLayerPairing(_ Limits, in TransferStateLayerPairingInput) (TransferStateLayerPairingOutput, error) {
	plan, err := CheckStateLayerConfig(in)
	if err != nil {
		return TransferStateLayerPairingOutput{}, err
	}
	positional, err := CheckStateRegistrations(in)
	if err != nil {
		return TransferStateLayerPairingOutput{}, err
	}
	var out TransferStateLayerPairingOutput
	if positional {
		out, err = pairPositionally(in)
	} else {
		out, err = pairByLayerID(in)
	}
	if err != nil {
		return TransferStateLayerPairingOutput{}, err
	}
	if in.Index == nil {
		return out, nil
	}
	out.Active, out.HostBytesPerToken = plan.Active, plan.HostBytesPerToken
	if out.SrcSlots, err = slotsOf("src.layer_ids", in.Src.LayerIDs, plan.Active); err != nil {
		return TransferStateLayerPairingOutput{}, err
	}
	if out.DstSlots, err = slotsOf("dst.layer_ids", in.Dst.LayerIDs, plan.Active); err != nil {
		return TransferStateLayerPairingOutput{}, err
	}
	return out, nil
}

// pairPositionally is rule 1: buffer i with buffer i.
func pairPositionally(in TransferStateLayerPairingInput) (TransferStateLayerPairingOutput, error) {
	out := TransferStateLayerPairingOutput{Positional: true, Pairs: []StatePair{}}
	for i := range in.Src.Ptrs {
		if in.Src.ItemLens[i] != in.Dst.ItemLens[i] {
			return TransferStateLayerPairingOutput{}, RejectItemLen(in, i, i)
		}
		out.Pairs = append(out.Pairs, StatePair{Src: i, Dst: i, ItemLen: in.Src.ItemLens[i]})
	}
	return out, nil
}

// pairByLayerID is rules 4 and 5 with the multisets held as count maps and
// each id's dst buffers as a queue. Map iteration order never reaches the
// output: differences are collected by walking the id lists, then sorted.
func pairByLayerID(in TransferStateLayerPairingInput) (TransferStateLayerPairingOutput, error) {
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
		return TransferStateLayerPairingOutput{}, RejectIdentity(in.PPSize, prefillOnly, decodeOnly)
	}
	queue := map[int64][]int{}
	for j, id := range dst {
		queue[id] = append(queue[id], j)
	}
	out := TransferStateLayerPairingOutput{Pairs: []StatePair{}}
	for i, id := range src {
		j := queue[id][0] // rule 4 guarantees one is left
		queue[id] = queue[id][1:]
		if in.Src.ItemLens[i] != in.Dst.ItemLens[j] {
			return TransferStateLayerPairingOutput{}, RejectItemLen(in, i, j)
		}
		out.Pairs = append(out.Pairs, StatePair{Src: i, Dst: j, ItemLen: in.Src.ItemLens[i]})
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
		if id >= DraftLayerIDBase {
			// |A| <= L <= DraftLayerIDBase, so |A| + j cannot overflow.
			slots = append(slots, numActive+id-DraftLayerIDBase)
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

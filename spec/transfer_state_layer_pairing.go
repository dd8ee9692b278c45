package spec

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

// IndexPlan is the checked index configuration: A, and the host capacity
// estimate when asked for.
type IndexPlan struct {
	// Active is A, ascending.
	Active []int64
	// HostBytesPerToken is L×kv + |A|×index, or nil.
	HostBytesPerToken *int64
}

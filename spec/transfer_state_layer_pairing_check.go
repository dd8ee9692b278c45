package spec

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

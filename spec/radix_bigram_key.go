package spec

// RadixBigramKeyInput is the input of radix.bigram_key (docs/spec/radix-acks.md §2.1).
type RadixBigramKeyInput struct {
	// Tokens are the token ids, each in [0, 2^32).
	Tokens []int64 `json:"tokens"`
	// Value are the tokens' KV slots; omitted when only the key is wanted.
	Value []SlotIdx `json:"value,omitzero"`
	// PageSize aligns the bigram key down to whole pages, >= 1.
	PageSize int `json:"page_size"`
}

// RadixBigramKeyOutput is the output of radix.bigram_key.
type RadixBigramKeyOutput struct {
	// Pairs are (t[i], t[i+1]) for i < len(tokens)-1; never nil.
	Pairs [][2]int64 `json:"pairs"`
	// Value is the input value truncated to len(pairs): token i's slot
	// serves bigram i; nil when no value was given.
	Value []SlotIdx `json:"value,omitzero"`
	// AlignedLen is len(pairs) floored to whole pages: what a tree caches.
	AlignedLen int `json:"aligned_len"`
}

// RadixPageHashesInput is the input of radix.page_hashes (docs/spec/radix-acks.md §2.4).
type RadixPageHashesInput struct {
	// Tokens are the token ids, each in [0, 2^32).
	Tokens []int64 `json:"tokens"`
	// Bigram hashes the bigram key of Tokens instead of the tokens.
	Bigram bool `json:"bigram,omitzero"`
	// PageSize is the number of units per hashed page, >= 1.
	PageSize int `json:"page_size"`
	// Prior is the digest the first page chains on; omitted for none.
	Prior string `json:"prior,omitzero"`
}

// RadixPageHashesOutput is the output of radix.page_hashes.
type RadixPageHashesOutput struct {
	// Units is the key length in units (tokens, or bigrams).
	Units int `json:"units"`
	// Hashes are the chained digests of every whole page; never nil.
	Hashes []string `json:"hashes"`
	// EventIDs are the hashes' int64 event ids.
	EventIDs []int64 `json:"event_ids"`
}

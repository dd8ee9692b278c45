package ref

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// PackBigram packs the pair (a, b) into one unit, a in the high word
// (docs/spec/radix-acks.md §0.1). The packing orders pairs for comparison only.
func PackBigram(a, b Unit) Unit { return a<<32 | b }

// ToBigram converts a token-mode key to its bigram key (docs/spec/radix-acks.md §2.1):
// unit i becomes the pair (t[i], t[i+1]), so n tokens give max(0, n-1)
// pairs. A key already in bigram mode is returned unchanged. The result
// never aliases k.Units; a token above 2^32-1 is ErrTokenRange.
func ToBigram(k RadixKey) (RadixKey, error) {
	if k.Bigram {
		return k, nil
	}
	for i, u := range k.Units {
		if u > MaxToken {
			return RadixKey{}, TokenRangeError(i, u)
		}
	}
	pairs := []Unit{}
	for i := 0; i+1 < len(k.Units); i++ {
		pairs = append(pairs, PackBigram(k.Units[i], k.Units[i+1]))
	}
	return RadixKey{Units: pairs, Extra: k.Extra, Bigram: true}, nil
}

// HashPage is the HiCache storage hash of units [start, end) of k chained on
// prior (docs/spec/radix-acks.md §2.4): lowercase hex of SHA-256(prior bytes ‖ unit
// bytes), where prior is the previous page's hex digest decoded to 32 bytes
// ("" for none), a token writes LE32(t) and a bigram writes LE32(a) then
// LE32(b) — never the packed LE64, which would change every hash.
func HashPage(k RadixKey, start, end int, prior string) (string, error) {
	if start < 0 || start > end || end > len(k.Units) {
		return "", Reject(ErrKeyRange, "end", end, fmt.Sprintf("0 <= start (%d) <= end <= len(key) (%d)", start, len(k.Units)))
	}
	h := sha256.New()
	if prior != "" {
		p, err := hex.DecodeString(prior)
		if err != nil || len(p) != sha256.Size {
			return "", Reject(ErrBadEnum, "prior", prior, "empty or 64 lowercase hex digits")
		}
		h.Write(p)
	}
	var w [4]byte
	for _, u := range k.Units[start:end] {
		if k.Bigram {
			binary.LittleEndian.PutUint32(w[:], uint32(u>>32))
			h.Write(w[:])
		}
		binary.LittleEndian.PutUint32(w[:], uint32(u))
		h.Write(w[:])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HashEventID is the int64 event id of a page hash (docs/spec/radix-acks.md §2.4): its
// first 16 hex digits read as a uint64 and reinterpreted as signed.
func HashEventID(digest string) (int64, error) {
	if len(digest) < 16 {
		return 0, Reject(ErrBadEnum, "digest", digest, "at least 16 hex digits")
	}
	u, err := strconv.ParseUint(digest[:16], 16, 64)
	if err != nil {
		return 0, Reject(ErrBadEnum, "digest", digest, "hex digits")
	}
	return int64(u), nil
}

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

// CheckBigramKeyInput validates radix.bigram_key's input in the order both
// twins report: tokens, page_size, value length.
func CheckBigramKeyInput(in RadixBigramKeyInput) error {
	if err := CheckTokens("tokens", in.Tokens); err != nil {
		return err
	}
	if in.PageSize < 1 {
		return Reject(ErrInvalidPageSize, "page_size", in.PageSize, ">= 1")
	}
	if in.Value != nil && len(in.Value) != len(in.Tokens) {
		return Reject(ErrValueLength, "value", len(in.Value), fmt.Sprintf("== len(tokens) (%d)", len(in.Tokens)))
	}
	return nil
}

// RadixBigramKey is the reference twin of radix.bigram_key: the EAGLE bigram key
// of a token sequence, its value pairing and its page-aligned length
// (docs/spec/radix-acks.md §2.1; alignment counts bigrams, after conversion).
func RadixBigramKey(_ Limits, in RadixBigramKeyInput) (RadixBigramKeyOutput, error) {
	if err := CheckBigramKeyInput(in); err != nil {
		return RadixBigramKeyOutput{}, err
	}
	k, _ := TokenKey("tokens", in.Tokens, ExtraKey{})
	b, err := ToBigram(k)
	if err != nil {
		return RadixBigramKeyOutput{}, err
	}
	out := RadixBigramKeyOutput{Pairs: [][2]int64{}, AlignedLen: len(b.Units) / in.PageSize * in.PageSize}
	for _, u := range b.Units {
		out.Pairs = append(out.Pairs, [2]int64{int64(u >> 32), int64(u & MaxToken)})
	}
	if in.Value != nil {
		out.Value = append([]SlotIdx{}, in.Value[:len(b.Units)]...)
	}
	return out, nil
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

// CheckPageHashesInput validates radix.page_hashes's input in the order
// both twins report: tokens, page_size, prior.
func CheckPageHashesInput(in RadixPageHashesInput) error {
	if err := CheckTokens("tokens", in.Tokens); err != nil {
		return err
	}
	if in.PageSize < 1 {
		return Reject(ErrInvalidPageSize, "page_size", in.PageSize, ">= 1")
	}
	if in.Prior != "" {
		if p, err := hex.DecodeString(in.Prior); err != nil || len(p) != sha256.Size || hex.EncodeToString(p) != in.Prior {
			return Reject(ErrBadEnum, "prior", in.Prior, "empty or 64 lowercase hex digits")
		}
	}
	return nil
}

// RadixPageHashes is the reference twin of radix.page_hashes: the HiCache
// storage hashes of a key's whole pages, each chained on the previous one,
// with their event ids (docs/spec/radix-acks.md §2.4).
func RadixPageHashes(_ Limits, in RadixPageHashesInput) (RadixPageHashesOutput, error) {
	if err := CheckPageHashesInput(in); err != nil {
		return RadixPageHashesOutput{}, err
	}
	k, _ := TokenKey("tokens", in.Tokens, ExtraKey{})
	if in.Bigram {
		k, _ = ToBigram(k)
	}
	out := RadixPageHashesOutput{Units: len(k.Units), Hashes: []string{}, EventIDs: []int64{}}
	prior := in.Prior
	for start := 0; start+in.PageSize <= len(k.Units); start += in.PageSize {
		h, err := HashPage(k, start, start+in.PageSize, prior)
		if err != nil {
			return RadixPageHashesOutput{}, err
		}
		id, _ := HashEventID(h)
		out.Hashes, out.EventIDs = append(out.Hashes, h), append(out.EventIDs, id)
		prior = h
	}
	return out, nil
}

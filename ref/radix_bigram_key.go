package ref

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// PackBigram packs the pair (a, b) into one unit, a in the high word
// (docs/spec/radix-acks.md §0.1). The packing orders pairs for comparison only.
func PackBigram(a, b spec.Unit) spec.Unit { return a<<32 | b }

// ToBigram converts a token-mode key to its bigram key (docs/spec/radix-acks.md §2.1):
// unit i becomes the pair (t[i], t[i+1]), so n tokens give max(0, n-1)
// pairs. A key already in bigram mode is returned unchanged. The result
// never aliases k.Units; a token above 2^32-1 is ErrTokenRange.
func ToBigram(k spec.RadixKey) (spec.RadixKey, error) {
	if k.Bigram {
		return k, nil
	}
	for i, u := range k.Units {
		if u > spec.MaxToken {
			return spec.RadixKey{}, TokenRangeError(i, u)
		}
	}
	pairs := []spec.Unit{}
	for i := 0; i+1 < len(k.Units); i++ {
		pairs = append(pairs, PackBigram(k.Units[i], k.Units[i+1]))
	}
	return spec.RadixKey{Units: pairs, Extra: k.Extra, Bigram: true}, nil
}

// HashPage is the HiCache storage hash of units [start, end) of k chained on
// prior (docs/spec/radix-acks.md §2.4): lowercase hex of SHA-256(prior bytes ‖ unit
// bytes), where prior is the previous page's hex digest decoded to 32 bytes
// ("" for none), a token writes LE32(t) and a bigram writes LE32(a) then
// LE32(b) — never the packed LE64, which would change every hash.
func HashPage(k spec.RadixKey, start, end int, prior string) (string, error) {
	if start < 0 || start > end || end > len(k.Units) {
		return "", spec.Reject(spec.ErrKeyRange, "end", end, fmt.Sprintf("0 <= start (%d) <= end <= len(key) (%d)", start, len(k.Units)))
	}
	h := sha256.New()
	if prior != "" {
		p, err := hex.DecodeString(prior)
		if err != nil || len(p) != sha256.Size {
			return "", spec.Reject(spec.ErrBadEnum, "prior", prior, "empty or 64 lowercase hex digits")
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
		return 0, spec.Reject(spec.ErrBadEnum, "digest", digest, "at least 16 hex digits")
	}
	u, err := strconv.ParseUint(digest[:16], 16, 64)
	if err != nil {
		return 0, spec.Reject(spec.ErrBadEnum, "digest", digest, "hex digits")
	}
	return int64(u), nil
}

// CheckBigramKeyInput validates radix.bigram_key's input in the order both
// twins report: tokens, page_size, value length.
func CheckBigramKeyInput(in spec.RadixBigramKeyInput) error {
	if err := CheckTokens("tokens", in.Tokens); err != nil {
		return err
	}
	if in.PageSize < 1 {
		return spec.Reject(spec.ErrInvalidPageSize, "page_size", in.PageSize, ">= 1")
	}
	if in.Value != nil && len(in.Value) != len(in.Tokens) {
		return spec.Reject(spec.ErrValueLength, "value", len(in.Value), fmt.Sprintf("== len(tokens) (%d)", len(in.Tokens)))
	}
	return nil
}

// RadixBigramKey is the reference twin of radix.bigram_key: the EAGLE bigram key
// of a token sequence, its value pairing and its page-aligned length
// (docs/spec/radix-acks.md §2.1; alignment counts bigrams, after conversion).
func RadixBigramKey(_ spec.Limits, in spec.RadixBigramKeyInput) (spec.RadixBigramKeyOutput, error) {
	if err := CheckBigramKeyInput(in); err != nil {
		return spec.RadixBigramKeyOutput{}, err
	}
	k, _ := TokenKey("tokens", in.Tokens, spec.ExtraKey{})
	b, err := ToBigram(k)
	if err != nil {
		return spec.RadixBigramKeyOutput{}, err
	}
	out := spec.RadixBigramKeyOutput{Pairs: [][2]int64{}, AlignedLen: len(b.Units) / in.PageSize * in.PageSize}
	for _, u := range b.Units {
		out.Pairs = append(out.Pairs, [2]int64{int64(u >> 32), int64(u & spec.MaxToken)})
	}
	if in.Value != nil {
		out.Value = append([]spec.SlotIdx{}, in.Value[:len(b.Units)]...)
	}
	return out, nil
}

// CheckPageHashesInput validates radix.page_hashes's input in the order
// both twins report: tokens, page_size, prior.
func CheckPageHashesInput(in spec.RadixPageHashesInput) error {
	if err := CheckTokens("tokens", in.Tokens); err != nil {
		return err
	}
	if in.PageSize < 1 {
		return spec.Reject(spec.ErrInvalidPageSize, "page_size", in.PageSize, ">= 1")
	}
	if in.Prior != "" {
		if p, err := hex.DecodeString(in.Prior); err != nil || len(p) != sha256.Size || hex.EncodeToString(p) != in.Prior {
			return spec.Reject(spec.ErrBadEnum, "prior", in.Prior, "empty or 64 lowercase hex digits")
		}
	}
	return nil
}

// RadixPageHashes is the reference twin of radix.page_hashes: the HiCache
// storage hashes of a key's whole pages, each chained on the previous one,
// with their event ids (docs/spec/radix-acks.md §2.4).
func RadixPageHashes(_ spec.Limits, in spec.RadixPageHashesInput) (spec.RadixPageHashesOutput, error) {
	if err := CheckPageHashesInput(in); err != nil {
		return spec.RadixPageHashesOutput{}, err
	}
	k, _ := TokenKey("tokens", in.Tokens, spec.ExtraKey{})
	if in.Bigram {
		k, _ = ToBigram(k)
	}
	out := spec.RadixPageHashesOutput{Units: len(k.Units), Hashes: []string{}, EventIDs: []int64{}}
	prior := in.Prior
	for start := 0; start+in.PageSize <= len(k.Units); start += in.PageSize {
		h, err := HashPage(k, start, start+in.PageSize, prior)
		if err != nil {
			return spec.RadixPageHashesOutput{}, err
		}
		id, _ := HashEventID(h)
		out.Hashes, out.EventIDs = append(out.Hashes, h), append(out.EventIDs, id)
		prior = h
	}
	return out, nil
}

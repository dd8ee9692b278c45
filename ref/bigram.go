package ref

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// PackBigram packs the pair (a, b) into one unit, a in the high word
// (radix-acks.md §0.1). The packing orders pairs for comparison only.
func PackBigram(a, b Unit) Unit { return a<<32 | b }

// ToBigram converts a token-mode key to its bigram key (radix-acks.md §2.1):
// unit i becomes the pair (t[i], t[i+1]), so n tokens give max(0, n-1)
// pairs. A key already in bigram mode is returned unchanged. The result
// never aliases k.Units; a token above 2^32-1 is ErrTokenRange.
func ToBigram(k Key) (Key, error) {
	if k.Bigram {
		return k, nil
	}
	for i, u := range k.Units {
		if u > MaxToken {
			return Key{}, ErrTokenRangeAt(i, u)
		}
	}
	pairs := []Unit{}
	for i := 0; i+1 < len(k.Units); i++ {
		pairs = append(pairs, PackBigram(k.Units[i], k.Units[i+1]))
	}
	return Key{Units: pairs, Extra: k.Extra, Bigram: true}, nil
}

// HashPage is the HiCache storage hash of units [start, end) of k chained on
// prior (radix-acks.md §2.4): lowercase hex of SHA-256(prior bytes ‖ unit
// bytes), where prior is the previous page's hex digest decoded to 32 bytes
// ("" for none), a token writes LE32(t) and a bigram writes LE32(a) then
// LE32(b) — never the packed LE64, which would change every hash.
func HashPage(k Key, start, end int, prior string) (string, error) {
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

// HashEventID is the int64 event id of a page hash (radix-acks.md §2.4): its
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

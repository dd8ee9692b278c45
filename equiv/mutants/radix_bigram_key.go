package mutants

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// BigramPairsTokenWithItself is docs/spec/radix-acks.md §2.5's mutation check: an
// off-by-one builder emitting (t[i], t[i]) instead of (t[i], t[i+1]).
func BigramPairsTokenWithItself() equiv.Killable {
	return &equiv.Mutant[spec.RadixBigramKeyInput, spec.RadixBigramKeyOutput]{
		Spec:    equiv.RadixBigramKey(),
		ID:      "bigram-pairs-token-with-itself",
		Section: "radix-acks.md §2.5",
		About:   "off-by-one bigram builder: pair i is (t[i], t[i]) instead of (t[i], t[i+1])",
		Fn: func(lim spec.Limits, in spec.RadixBigramKeyInput) (spec.RadixBigramKeyOutput, error) {
			out, err := fast.RadixBigramKey(lim, in)
			for i := range out.Pairs {
				out.Pairs[i][1] = out.Pairs[i][0]
			}
			return out, err
		},
	}
}

// BigramHashPackedLE64 is docs/spec/radix-acks.md §2.4's trap: hashing a packed bigram
// a<<32|b as one LE64 word writes the bytes of b before a and changes every
// storage hash (the reason the notes kept pairs out of int64 packing).
func BigramHashPackedLE64() equiv.Killable {
	return &equiv.Mutant[spec.RadixPageHashesInput, spec.RadixPageHashesOutput]{
		Spec:    equiv.RadixPageHashes(),
		ID:      "bigram-hash-packed-le64",
		Section: "radix-acks.md §2.4",
		About:   "bigrams hashed as the packed uint64 in little-endian: every bigram page hash changes",
		Fn: func(lim spec.Limits, in spec.RadixPageHashesInput) (spec.RadixPageHashesOutput, error) {
			out, err := fast.RadixPageHashes(lim, in)
			if err != nil || !in.Bigram {
				return out, err
			}
			prior, _ := hex.DecodeString(in.Prior)
			for p := range out.Hashes {
				buf := append([]byte{}, prior...)
				for i := p * in.PageSize; i < (p+1)*in.PageSize; i++ {
					buf = binary.LittleEndian.AppendUint64(buf, uint64(ref.PackBigram(spec.Unit(in.Tokens[i]), spec.Unit(in.Tokens[i+1]))))
				}
				sum := sha256.Sum256(buf)
				out.Hashes[p], out.EventIDs[p] = hex.EncodeToString(sum[:]), int64(binary.BigEndian.Uint64(sum[:8]))
				prior = sum[:]
			}
			return out, nil
		},
	}
}

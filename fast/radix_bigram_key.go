package fast

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ToBigram is the one-pass twin of ref.ToBigram (docs/spec/radix-acks.md §2.1, §2.3
// "Fast"): the range check is an OR-reduction (the first offending index is
// searched for only on the error path) and the pairs are written into one
// exact-size backing. A key already in bigram mode is returned unchanged; the
// result never aliases k.Units; a token above 2^32-1 is ErrTokenRange at the
// same index ref reports.
func ToBigram(k spec.RadixKey) (spec.RadixKey, error) {
	if k.Bigram {
		return k, nil
	}
	if err := checkTokenUnits(k.Units); err != nil {
		return spec.RadixKey{}, err
	}
	return spec.RadixKey{Units: packPairs(k.Units), Extra: k.Extra, Bigram: true}, nil
}

// checkTokenUnits rejects the first unit above spec.MaxToken with
// ref.TokenRangeError. The common (valid) case is one branch-free pass
// (orUnits); only a failing key is scanned again for the index.
func checkTokenUnits(t []spec.Unit) error {
	if orUnits(t)>>32 == 0 {
		return nil
	}
	for i, u := range t {
		if u > spec.MaxToken {
			return ref.TokenRangeError(i, u)
		}
	}
	return nil
}

// orUnits is the bitwise OR of t: a unit is a valid token exactly when its
// high 32 bits are clear, so one OR over a page checks all of it. Four
// independent accumulators keep the loop from waiting on one OR chain (a
// single accumulator measured as much time as hashing the page).
func orUnits(t []spec.Unit) spec.Unit {
	var a0, a1, a2, a3 spec.Unit
	i := 0
	for ; i+4 <= len(t); i += 4 {
		b := t[i : i+4 : i+4]
		a0, a1, a2, a3 = a0|b[0], a1|b[1], a2|b[2], a3|b[3]
	}
	for ; i < len(t); i++ {
		a0 |= t[i]
	}
	return a0 | a1 | a2 | a3
}

// packPairs returns the max(0, len(t)-1) packed pairs of t in a fresh
// backing (never nil, so an empty key encodes as [] like ref's). Tokens must
// already be checked against spec.MaxToken.
func packPairs(t []spec.Unit) []spec.Unit {
	if len(t) < 2 {
		return []spec.Unit{}
	}
	out := make([]spec.Unit, len(t)-1)
	first, next := t[:len(out)], t[1:len(out)+1] // equal lengths: no bounds checks in the loop
	for i := range out {
		out[i] = ref.PackBigram(first[i], next[i])
	}
	return out
}

// hashChunkUnits bounds HashPage's stack buffer: 256 units of up to 8 bytes
// each are encoded, then handed to SHA-256 in one Write.
const hashChunkUnits = 256

// HashPage is ref.HashPage (docs/spec/radix-acks.md §2.4) without a Write call per
// unit: units are encoded as LE32 words (a bigram as LE32(a) then LE32(b),
// never the packed LE64) into a stack buffer that is hashed a chunk at a
// time. Errors and digests are identical to ref's.
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
	var buf [hashChunkUnits * 8]byte
	units := k.Units[start:end]
	for len(units) > 0 {
		c := units[:min(len(units), hashChunkUnits)]
		units = units[len(c):]
		n := 0
		if k.Bigram {
			for _, u := range c {
				binary.LittleEndian.PutUint32(buf[n:], uint32(u>>32))
				binary.LittleEndian.PutUint32(buf[n+4:], uint32(u))
				n += 8
			}
		} else {
			for _, u := range c {
				binary.LittleEndian.PutUint32(buf[n:], uint32(u))
				n += 4
			}
		}
		h.Write(buf[:n])
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])), nil
}

// BigramView is an O(1) bigram view over raw tokens (docs/spec/radix-acks.md §2.3
// "Designed option"): pair i is PackBigram(t[i], t[i+1]), so n pairs read
// n+1 tokens and a slice shares its boundary token with its neighbour.
// Nothing is copied until Materialize. The zero value is the empty view.
type BigramView struct {
	t []spec.Unit // the n+1 tokens the view reads; empty when n == 0
	n int
}

// NewBigramView views tokens as their max(0, len-1) pairs without copying.
// It scans the tokens once (read-only, no allocation) and rejects the first
// above spec.MaxToken with ErrTokenRange, so every pair it yields is the one
// ref.ToBigram would build. The caller must not modify tokens while the view
// is in use.
func NewBigramView(tokens []spec.Unit) (BigramView, error) {
	if err := checkTokenUnits(tokens); err != nil {
		return BigramView{}, err
	}
	if len(tokens) < 2 {
		return BigramView{}, nil
	}
	return BigramView{t: tokens, n: len(tokens) - 1}, nil
}

// Len is the number of pairs.
func (v BigramView) Len() int { return v.n }

// At returns pair i packed; i outside [0, Len()) is ErrKeyRange.
func (v BigramView) At(i int) (spec.Unit, error) {
	if i < 0 || i >= v.n {
		return 0, spec.Reject(spec.ErrKeyRange, "i", i, fmt.Sprintf("in [0, %d)", v.n))
	}
	return ref.PackBigram(v.t[i], v.t[i+1]), nil
}

// Slice returns the view of pairs [i, j) in O(1); it needs 0 <= i <= j <=
// Len(), else ErrKeyRange.
func (v BigramView) Slice(i, j int) (BigramView, error) {
	if err := checkSlice(i, j, v.n); err != nil {
		return BigramView{}, err
	}
	if i == j {
		return BigramView{}, nil
	}
	return BigramView{t: v.t[i : j+1], n: j - i}, nil
}

// Materialize packs the pairs into a fresh exact-size slice (never nil),
// equal to ref.ToBigram's units for the same tokens.
func (v BigramView) Materialize() []spec.Unit {
	if v.n == 0 {
		return []spec.Unit{}
	}
	return packPairs(v.t)
}

// AppendTo appends the packed pairs to dst and returns it: Materialize into
// a caller's buffer, so a steady-state conversion allocates nothing.
func (v BigramView) AppendTo(dst []spec.Unit) []spec.Unit {
	if v.n == 0 {
		return dst
	}
	dst = slices.Grow(dst, v.n)
	out := dst[len(dst) : len(dst)+v.n]
	first, next := v.t[:len(out)], v.t[1:len(out)+1] // equal lengths: no bounds checks in the loop
	for i := range out {
		out[i] = ref.PackBigram(first[i], next[i])
	}
	return dst[:len(dst)+v.n]
}

// checkSlice rejects a slice [i, j) of an n-unit sequence unless
// 0 <= i <= j <= n, naming the first bound broken.
func checkSlice(i, j, n int) error {
	if i < 0 || i > n {
		return spec.Reject(spec.ErrKeyRange, "i", i, fmt.Sprintf("in [0, %d]", n))
	}
	if j < i || j > n {
		return spec.Reject(spec.ErrKeyRange, "j", j, fmt.Sprintf("in [i (%d), %d]", i, n))
	}
	return nil
}

// RadixBigramKey is the fast twin of radix.bigram_key (docs/spec/radix-acks.md §2.1): the
// pairs are read straight off the tokens in one pass, without building the
// packed key ref goes through.
func RadixBigramKey(_ spec.Limits, in spec.RadixBigramKeyInput) (spec.RadixBigramKeyOutput, error) {
	if err := ref.CheckBigramKeyInput(in); err != nil {
		return spec.RadixBigramKeyOutput{}, err
	}
	n := max(0, len(in.Tokens)-1)
	out := spec.RadixBigramKeyOutput{Pairs: make([][2]int64, n), AlignedLen: n / in.PageSize * in.PageSize}
	for i := range out.Pairs {
		out.Pairs[i] = [2]int64{in.Tokens[i], in.Tokens[i+1]}
	}
	if in.Value != nil {
		out.Value = append(make([]spec.SlotIdx, 0, n), in.Value[:n]...)
	}
	return out, nil
}

// RadixPageHashes is the fast twin of radix.page_hashes (docs/spec/radix-acks.md §2.4):
// each page is encoded into one reused buffer and hashed with a single
// Write, chaining on the previous page's raw digest instead of re-decoding
// its hex.
func RadixPageHashes(_ spec.Limits, in spec.RadixPageHashesInput) (spec.RadixPageHashesOutput, error) {
	if err := ref.CheckPageHashesInput(in); err != nil {
		return spec.RadixPageHashesOutput{}, err
	}
	units, width := len(in.Tokens), 4
	if in.Bigram {
		units, width = max(0, len(in.Tokens)-1), 8
	}
	pages := units / in.PageSize
	out := spec.RadixPageHashesOutput{Units: units, Hashes: make([]string, pages), EventIDs: make([]int64, pages)}
	if pages == 0 {
		// A page larger than the key hashes nothing. Returning here keeps
		// page_size from sizing the buffer below: only a page_size <= units
		// (the tokens sent) reaches it, so page_size·width cannot overflow or
		// ask for more than the input's own size.
		return out, nil
	}
	var prior []byte
	if in.Prior != "" {
		prior, _ = hex.DecodeString(in.Prior)
	}
	buf := make([]byte, 0, sha256.Size+in.PageSize*width)
	for p := range pages {
		buf = append(buf[:0], prior...)
		from := p * in.PageSize
		if in.Bigram { // pair i is (t[i], t[i+1]): the page reads one token more
			buf = appendPairs(buf, in.Tokens[from:from+in.PageSize+1])
		} else {
			for _, t := range in.Tokens[from : from+in.PageSize] {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
			}
		}
		sum := sha256.Sum256(buf)
		out.Hashes[p] = hex.EncodeToString(sum[:])
		out.EventIDs[p] = int64(binary.BigEndian.Uint64(sum[:8]))
		prior = append(prior[:0], sum[:]...)
	}
	return out, nil
}

// appendPairs appends LE32(t[i]) LE32(t[i+1]) for each adjacent pair of t.
func appendPairs(buf []byte, t []int64) []byte {
	for i := 0; i+1 < len(t); i++ {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t[i]))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t[i+1]))
	}
	return buf
}

package fast

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// keyBacking is the unit storage a RadixKey views (docs/spec/radix-acks.md §1.1). Its units
// are never written after construction.
type keyBacking struct {
	// units are the stored units, or the raw tokens of a bigram view.
	units []spec.Unit
	// private is set only on backings the tree allocated (Compact, the
	// root's empty key), never on one over a caller's slice.
	private bool
	// pairs marks a bigram view over raw tokens (§2.3 "Designed option"):
	// unit i of a view at off is PackBigram(units[off+i], units[off+i+1]).
	pairs bool
}

// RadixKey is the fast tree's radix key (§1.1 RadixKey): an O(1) view of n units starting at off
// in a shared backing (docs/spec/radix-acks.md §1.1). Slicing never copies; only
// Compact, Units and ToBigram materialize. The zero RadixKey is empty.
type RadixKey struct {
	b      *keyBacking
	off, n int
	// Extra is the key's namespace.
	Extra spec.ExtraKey
	// Bigram is set when the units are (packed or viewed) bigrams.
	Bigram bool
}

// NewRadixKey views units as a key without copying them (§1.1 NewKey). The
// backing is not private: a tree storing the key must Compact it. The caller
// must not modify units while the key is in use.
func NewRadixKey(units []spec.Unit, extra spec.ExtraKey, bigram bool) RadixKey {
	return RadixKey{b: &keyBacking{units: units}, n: len(units), Extra: extra, Bigram: bigram}
}

// AsBigram returns k's bigram key (§2.1) as a view: a key already in bigram
// mode is k itself; a token key is viewed pair-wise over its tokens (§2.3
// "Designed option") after a read-only range scan, so nothing is copied
// until the key is stored. A token above 2^32-1 is ErrTokenRange, exactly as
// ref.ToBigram reports it.
func (k RadixKey) AsBigram() (RadixKey, error) {
	if k.Bigram {
		return k, nil
	}
	units := k.plain()
	if err := checkTokenUnits(units); err != nil {
		return RadixKey{}, err
	}
	return pairsKey(units, k.Extra), nil
}

// pairsKey is the bigram view of already-checked tokens.
func pairsKey(tokens []spec.Unit, extra spec.ExtraKey) RadixKey {
	return RadixKey{b: &keyBacking{units: tokens, pairs: true}, n: max(0, len(tokens)-1), Extra: extra, Bigram: true}
}

// Len is the number of units in the view.
func (k RadixKey) Len() int { return k.n }

// At returns unit i; i outside [0, Len()) is ErrKeyRange.
func (k RadixKey) At(i int) (spec.Unit, error) {
	if i < 0 || i >= k.n {
		return 0, spec.Reject(spec.ErrKeyRange, "i", i, fmt.Sprintf("in [0, %d)", k.n))
	}
	return k.at(i), nil
}

// at is At without the range check.
func (k RadixKey) at(i int) spec.Unit {
	u := k.b.units
	if k.b.pairs {
		return ref.PackBigram(u[k.off+i], u[k.off+i+1])
	}
	return u[k.off+i]
}

// Slice is the view of units [i, j) over the same backing, with the same
// Extra and Bigram, in O(1); it needs 0 <= i <= j <= Len(), else ErrKeyRange.
func (k RadixKey) Slice(i, j int) (RadixKey, error) {
	if err := checkSlice(i, j, k.n); err != nil {
		return RadixKey{}, err
	}
	return k.slice(i, j), nil
}

// slice is Slice without the range check.
func (k RadixKey) slice(i, j int) RadixKey {
	k.off, k.n = k.off+i, j-i
	return k
}

// plain returns the viewed units of a key that is not a pair view.
func (k RadixKey) plain() []spec.Unit {
	if k.b == nil {
		return nil
	}
	return k.b.units[k.off : k.off+k.n : k.off+k.n]
}

// MatchLen is the page-granular match of §1.3: the length of the longest
// common prefix of k and other, floored to a multiple of ps (for aligned
// keys that is the upstream page loop). Keys in different namespaces are
// ErrExtraKeyMismatch; ps < 1 is ErrInvalidPageSize.
func (k RadixKey) MatchLen(other RadixKey, ps int) (int, error) {
	if ps < 1 {
		return 0, spec.Reject(spec.ErrInvalidPageSize, "page_size", ps, ">= 1")
	}
	if k.Extra != other.Extra {
		return 0, spec.Reject(spec.ErrExtraKeyMismatch, "extra", other.Extra, fmt.Sprintf("== %+v", k.Extra))
	}
	return matchLen(k, other, ps), nil
}

// matchLen is MatchLen without the checks.
func matchLen(a, b RadixKey, ps int) int {
	var l int
	switch {
	case a.n == 0 || b.n == 0:
		return 0
	case !a.b.pairs && !b.b.pairs:
		l = lcpUnits(a.plain(), b.plain())
	case !a.b.pairs:
		l = lcpPairs(a.plain(), b.b.units[b.off:b.off+b.n+1])
	case !b.b.pairs:
		l = lcpPairs(b.plain(), a.b.units[a.off:a.off+a.n+1])
	default:
		l = lcpGeneric(a, b)
	}
	return l / ps * ps
}

// lcpChunk is how many units lcpUnits hands memequal at a time: large
// enough that the call overhead vanishes, small enough that a mismatch is
// located without rescanning much.
const lcpChunk = 512

// lcpUnits is the length of the common prefix of a and b, compared a chunk
// at a time with bytes.Equal over byte views (memequal, SIMD) and finished
// element-wise inside the first unequal chunk.
func lcpUnits(a, b []spec.Unit) int {
	n := min(len(a), len(b))
	i := 0
	for ; i < n; i += lcpChunk {
		j := min(i+lcpChunk, n)
		if !bytes.Equal(unitBytes(a[i:j]), unitBytes(b[i:j])) {
			break
		}
	}
	if i >= n {
		return n
	}
	for a[i] == b[i] {
		i++
	}
	return i
}

// lcpPairs is the common prefix of packed pairs s and the pair view over
// tokens t (len(t)-1 pairs). Blocks of 8 pairs are compared branch-free by
// OR-ing the XOR differences (about twice the throughput of a compare per
// pair); the first unequal block is finished pair by pair.
func lcpPairs(s, t []spec.Unit) int {
	n := min(len(s), len(t)-1)
	s, t = s[:n], t[:n+1]
	i := 0
	for ; i+8 <= n; i += 8 {
		a, b := s[i:i+8:i+8], t[i:i+9:i+9]
		d := a[0] ^ ref.PackBigram(b[0], b[1])
		d |= a[1] ^ ref.PackBigram(b[1], b[2])
		d |= a[2] ^ ref.PackBigram(b[2], b[3])
		d |= a[3] ^ ref.PackBigram(b[3], b[4])
		d |= a[4] ^ ref.PackBigram(b[4], b[5])
		d |= a[5] ^ ref.PackBigram(b[5], b[6])
		d |= a[6] ^ ref.PackBigram(b[6], b[7])
		d |= a[7] ^ ref.PackBigram(b[7], b[8])
		if d != 0 {
			break
		}
	}
	for ; i < n; i++ {
		if s[i] != ref.PackBigram(t[i], t[i+1]) {
			return i
		}
	}
	return n
}

// lcpGeneric is the common prefix of two pair views.
func lcpGeneric(a, b RadixKey) int {
	n := min(a.n, b.n)
	for i := range n {
		if a.at(i) != b.at(i) {
			return i
		}
	}
	return n
}

// unitBytes views units as their in-memory bytes (for memequal and map
// keys); the view aliases u and must not outlive it.
func unitBytes(u []spec.Unit) []byte {
	if len(u) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&u[0])), len(u)*8)
}

// unitString is unitBytes as a string, for map keys; it aliases u, which
// must stay unmodified while the string is in use (stored keys are
// immutable; query keys only live for the lookup).
func unitString(u []spec.Unit) string {
	if len(u) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(&u[0])), len(u)*8)
}

// ChildKey selects a child (docs/spec/radix-acks.md §1.3): the namespace and the bytes
// of the first page (the whole key when shorter than a page). Two keys
// select the same child iff their ChildKeys are ==.
type ChildKey struct {
	// Extra is the namespace.
	Extra spec.ExtraKey
	// Page is the first page's units as native-endian bytes.
	Page string
}

// ChildKey returns k's child key for page size ps (§1.3). For a plain view
// the page aliases k's backing (no allocation); a pair view packs the page
// into a small fresh string. ps < 1 is treated as 1.
func (k RadixKey) ChildKey(ps int) ChildKey {
	p := min(max(ps, 1), k.n)
	if k.b == nil || !k.b.pairs {
		return ChildKey{Extra: k.Extra, Page: unitString(k.slice(0, p).plain())}
	}
	return ChildKey{Extra: k.Extra, Page: string(unitBytes(k.slice(0, p).materialize()))}
}

// Equal reports whether k and other have the same Extra, Bigram flag and
// units.
func (k RadixKey) Equal(other RadixKey) bool {
	return k.Extra == other.Extra && k.Bigram == other.Bigram && k.n == other.n && matchLen(k, other, 1) == k.n
}

// Compact returns k with a private backing of exactly its units (§1.1 store
// sites S1–S4): k itself when it already is one, else a copy. The second
// result is the number of units copied (0 or Len()), which the tree adds to
// CopiedUnits.
func (k RadixKey) Compact() (RadixKey, int) {
	if k.IsCompact() {
		return k, 0
	}
	return RadixKey{b: &keyBacking{units: k.materialize(), private: true}, n: k.n, Extra: k.Extra, Bigram: k.Bigram}, k.n
}

// IsCompact reports R-COMPACT for one key: it views the whole of a private
// backing.
func (k RadixKey) IsCompact() bool {
	return k.b != nil && k.b.private && !k.b.pairs && k.off == 0 && k.n == len(k.b.units)
}

// Units returns a fresh copy of the key's units (never nil).
func (k RadixKey) Units() []spec.Unit { return k.materialize() }

// ToRef returns the key as a spec.RadixKey with freshly copied units.
func (k RadixKey) ToRef() spec.RadixKey {
	return spec.RadixKey{Units: k.Units(), Extra: k.Extra, Bigram: k.Bigram}
}

// materialize copies the viewed units (packing a pair view) into a fresh
// exact-size slice, never nil.
func (k RadixKey) materialize() []spec.Unit {
	if k.n == 0 {
		return []spec.Unit{}
	}
	if k.b.pairs {
		return packPairs(k.b.units[k.off : k.off+k.n+1])
	}
	out := make([]spec.Unit, k.n)
	copy(out, k.plain())
	return out
}

// TokenKeyView is ref.TokenKey without the copy: a validated token id in
// [0, 2^32) has the same bits as int64 and as Unit, so the key's units are
// tokens itself, reinterpreted. The range check is one branch-free pass;
// a bad id is reported exactly as ref.TokenKey reports it. The key aliases
// tokens: the caller must not modify them while the key is in use (trees
// copy what they store, so a key may be passed to Insert).
func TokenKeyView(field string, tokens []int64, extra spec.ExtraKey) (spec.RadixKey, error) {
	var units []spec.Unit
	if len(tokens) > 0 {
		units = unsafe.Slice((*spec.Unit)(unsafe.Pointer(unsafe.SliceData(tokens))), len(tokens))
	}
	if err := checkTokenUnits(units); err != nil {
		return spec.RadixKey{}, ref.CheckTokens(field, tokens)
	}
	if units == nil {
		units = []spec.Unit{}
	}
	return spec.RadixKey{Units: units, Extra: extra}, nil
}

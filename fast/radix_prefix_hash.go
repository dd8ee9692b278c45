package fast

import (
	"bytes"
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/kvtwin/kvtwin/internal/u32le"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
	"github.com/zeebo/xxh3"
)

// littleEndian reports whether units lie in memory as the little-endian
// bytes the prefix hash is defined over, so a page can be hashed in place.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// foldHash is hᵢ from hᵢ₋₁ and the page hash pᵢ (ref.FoldPrefixHash,
// docs/spec/radix-acks.md §1.14): XXH3-64 of the two as 16 little-endian
// bytes.
func foldHash(prev, page uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], prev)
	binary.LittleEndian.PutUint64(b[8:], page)
	return xxh3.Hash(b[:])
}

// prefixHasher computes prefix-hash chains (docs/spec/radix-acks.md §1.14)
// in one streaming pass: a plain page is hashed where it lies (no copy), a
// pair-view page is packed into buf first. It equals ref.PrefixHashes page
// for page.
type prefixHasher struct {
	buf []byte
}

// appendChain appends the hashes of q's whole pages of ps units, chained
// from prev, to dst.
func (h *prefixHasher) appendChain(dst []spec.PrefixHash, prev spec.PrefixHash, q RadixKey, ps int) []spec.PrefixHash {
	if q.b == nil {
		return dst
	}
	if !q.b.pairs {
		units := q.plain()
		for i := 0; i+ps <= len(units); i += ps {
			prev = h.plainPage(prev, units[i:i+ps])
			dst = append(dst, prev)
		}
		return dst
	}
	if cap(h.buf) < 8*ps {
		h.buf = make([]byte, 8*ps)
	}
	b := h.buf[:8*ps]
	for i := 0; i+ps <= q.n; i += ps {
		for j := range ps {
			binary.LittleEndian.PutUint64(b[8*j:], q.at(i+j))
		}
		prev = spec.PrefixHash(foldHash(uint64(prev), xxh3.Hash(b)))
		dst = append(dst, prev)
	}
	return dst
}

// plainPage is the hash of one page of stored units chained on prev: in
// place on a little-endian machine, where the units already lie as the
// bytes the hash is defined over, packed into buf otherwise.
func (h *prefixHasher) plainPage(prev spec.PrefixHash, page []spec.Unit) spec.PrefixHash {
	return spec.PrefixHash(foldHash(uint64(prev), xxh3.Hash(pageBytes(page, &h.buf))))
}

// chainStart is the hash a node's first page chains on: its parent's last
// page hash, or the namespace seed under the root.
func (t *RadixTree) chainStart(parent *node, k RadixKey) spec.PrefixHash {
	if parent == t.root {
		return ref.PrefixHashSeed(k.Extra, k.Bigram)
	}
	return parent.hashes[len(parent.hashes)-1]
}

// PrefixHashes is the prefix-hash chain of k's whole pages in the tree's
// unit space (docs/spec/radix-acks.md §1.14), in one pass over k; Eagle
// trees hash k's bigrams without materializing them.
func (t *RadixTree) PrefixHashes(k spec.RadixKey) ([]spec.PrefixHash, error) {
	var qb keyBacking
	q, err := t.queryKey(k, &qb)
	if err != nil {
		return nil, err
	}
	var h prefixHasher
	return h.appendChain(make([]spec.PrefixHash, 0, q.n/t.ps), ref.PrefixHashSeed(q.Extra, q.Bigram), q, t.ps), nil
}

// PrefixLenHashed is PrefixLen comparing, after a child is chosen by its
// first page's units, the node's following pages by their stored prefix
// hashes: 8 bytes a page instead of the page's units (§1.14). hashes must
// be PrefixHashes(k) of a tree with this configuration. Read-only and safe
// concurrently with PrefixLen and itself; it allocates nothing.
func (t *RadixTree) PrefixLenHashed(k spec.RadixKey, hashes []spec.PrefixHash) (int, error) {
	return t.readLen(k, hashes, true)
}

// PrefixLenHashedLE32 is PrefixLenHashed for the prompt whose token ids
// are the little-endian u32 values of le (a binary token list) in the
// namespace extra, with hashes its chain (PageHasher.ChainLE32): the walk
// widens only the page each child is chosen by, so a long binary prompt is
// scored without its 8-byte ids ever being written. On an Eagle tree,
// whose keys are bigrams of the whole list, it widens the list and is
// PrefixLenHashed. A length that is not a multiple of 4 is
// ErrLengthMismatch; a hash count other than the whole pages' is
// CheckPrefixHashCount's error.
func (t *RadixTree) PrefixLenHashedLE32(le []byte, extra spec.ExtraKey, hashes []spec.PrefixHash) (int, error) {
	if len(le)%4 != 0 {
		return 0, spec.Reject(spec.ErrLengthMismatch, "le", len(le), "a multiple of 4 bytes")
	}
	if t.cfg.Disable {
		return 0, nil
	}
	n := len(le) / 4
	if t.cfg.Eagle {
		tokens := make([]int64, n)
		u32le.Widen(tokens, le)
		return t.PrefixLenHashed(spec.RadixKey{Units: unitsOf(tokens), Extra: extra}, hashes)
	}
	pages := n / t.ps
	if err := ref.CheckPrefixHashCount(len(hashes), pages); err != nil {
		return 0, err
	}
	var buf [pageBuf]int64
	page := buf[:]
	if t.ps > len(buf) {
		page = make([]int64, t.ps)
	}
	page = page[:t.ps]
	total := 0 // pages matched
	for nd := t.root; total < pages && len(nd.children) > 0; {
		u32le.Widen(page, le[4*total*t.ps:])
		c := t.child(nd, ChildKey{Extra: extra, Page: unitString(unitsOf(page))})
		if c == nil {
			break
		}
		p := hashedPages(c, hashes[total:], pages-total)
		total += p
		if p*t.ps < c.key.n {
			break
		}
		nd = c
	}
	return total * t.ps, nil
}

// hashedPages is how many of c's pages match the query whose chain from
// c's depth on is qh, with qPages whole pages left: the first page always
// (the child key chose c by it), then each while the prefix hashes agree.
func hashedPages(c *node, qh []spec.PrefixHash, qPages int) int {
	pages := min(len(c.hashes), qPages)
	j := 1
	// Whole blocks first, compared as bytes (the runtime's vector memequal:
	// a long full hit compares ~30 KB a pool, 4-5× faster than one hash at a
	// time), then hash by hash inside the block that differs.
	for j+hashBlock <= pages && bytes.Equal(hashBytes(c.hashes[j:j+hashBlock]), hashBytes(qh[j:j+hashBlock])) {
		j += hashBlock
	}
	for j < pages && c.hashes[j] == qh[j] {
		j++
	}
	return j
}

// hashBlock is how many prefix hashes hashedPages compares at once.
const hashBlock = 64

// hashBytes is hs's memory as bytes, for a comparison of equality only.
func hashBytes(hs []spec.PrefixHash) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(hs))), 8*len(hs))
}

// TokenKeyChain is TokenKeyView and the key's prefix-hash chain for pages
// of ps units (docs/spec/radix-acks.md §1.14): each page's ids are
// range-checked as the page is hashed, while it is in cache, so a long
// prompt is read from memory once instead of once to check and once to
// hash; the page hashes are then folded in order.
// A bad id is reported exactly as ref.TokenKey reports it (the first one,
// naming field[i]); ps < 1 is ErrInvalidPageSize. The key aliases tokens,
// as TokenKeyView's does.
func TokenKeyChain(field string, tokens []int64, extra spec.ExtraKey, ps int) (spec.RadixKey, []spec.PrefixHash, error) {
	h, err := NewPageHasher(ps, make([]spec.PrefixHash, 0, len(tokens)/max(ps, 1)))
	if err != nil {
		return spec.RadixKey{}, nil, err
	}
	return h.Seed(extra).Chain(field, tokens, extra)
}

// PageHasher computes a prompt's page hashes pᵢ (docs/spec/radix-acks.md
// §1.14, unseeded, not yet folded) while the prompt is still arriving, so
// that hashing a long prompt overlaps its transfer: §1.14 makes each page's
// hash independent of the pages before it, and only the cheap fold is
// sequential. Chain finishes what Add began and equals TokenKeyChain
// (ChainLE32 what HashLE32 began). Told the namespace first (Seed), the
// vector page hash folds each page as it hashes it, and the chain is then
// mostly folded already. A PageHasher is used by one goroutine at a time.
type PageHasher struct {
	ps int
	// pages[:folded] are chain hashes hᵢ (folded as they were hashed, after
	// Seed), pages[folded:] page hashes pᵢ not yet folded.
	pages   []spec.PrefixHash
	folded  int
	seeded  bool          // Seed was called: seed is h₋₁
	extra   spec.ExtraKey // the namespace Seed was given
	seed    uint64        // its ref.PrefixHashSeed
	acc     uint64        // the OR of every unit hashed (a bit past 32: a bad id)
	buf     []byte
	inRange bool // every id given is known to be in [0, 2^32-1] (InRange)
}

// NewPageHasher is an empty PageHasher for pages of ps units that appends
// the page hashes to pages[:0] (its capacity is reused; nil is fine). ps <
// 1 is ErrInvalidPageSize.
func NewPageHasher(ps int, pages []spec.PrefixHash) (*PageHasher, error) {
	if ps < 1 {
		return nil, spec.Reject(spec.ErrInvalidPageSize, "page_size", ps, ">= 1")
	}
	return &PageHasher{ps: ps, pages: pages[:0]}, nil
}

// InRange tells h that every id it will be given is already known to be in
// [0, 2^32-1] (decoded from 32 bits, or parsed within that bound), so Add
// and Chain skip the range check they would otherwise fold into hashing
// (an OR over every unit: about a third of a 240K-token chain here). It
// returns h.
func (h *PageHasher) InRange() *PageHasher {
	h.inRange = true
	return h
}

// Seed tells h the namespace Chain will be given (extra), so that the
// vector page hash of 64-unit pages (Add, AddLE32, HashLE32 on AVX-512
// CPUs) folds each page into the chain as it hashes it, in the same pass:
// the fold's sequential dependency then runs beside the hashing instead of
// after it (docs/perf.md, "Then the ids read where they lie"). Chain given
// another namespace is still right: it hashes the prompt again. It
// returns h.
func (h *PageHasher) Seed(extra spec.ExtraKey) *PageHasher {
	h.seeded, h.extra, h.seed = true, extra, uint64(ref.PrefixHashSeed(extra, false))
	return h
}

// seedOf is the chain seed of the namespace extra, Seed's without
// deriving it again when it is Seed's namespace.
func (h *PageHasher) seedOf(extra spec.ExtraKey) uint64 {
	if h.seeded && extra == h.extra {
		return h.seed
	}
	return uint64(ref.PrefixHashSeed(extra, false))
}

// PageSize is the page size h hashes.
func (h *PageHasher) PageSize() int { return h.ps }

// Pages is how many whole pages h has hashed so far.
func (h *PageHasher) Pages() int { return len(h.pages) }

// Add hashes the whole pages of tokens that earlier calls did not. tokens
// is the prompt so far: each call's tokens must extend the previous call's
// (the same ids in front), which is what lets it hash only the new pages.
// Ids past 2^32-1 are not refused here; Chain reports them.
func (h *PageHasher) Add(tokens []int64) {
	done := len(h.pages)
	n := len(tokens)/h.ps - done
	if n <= 0 {
		return
	}
	units := unitsOf(tokens[done*h.ps : (done+n)*h.ps])
	if h.ps == 64 && littleEndian && useHash512 {
		// 64-unit pages are 512 bytes, hashed by the vector code
		// (radix_prefix_hash_amd64.s), which ORs every unit for the range
		// check and, after Seed, folds each page as it ends: one pass.
		prev, fold := h.foldStart()
		h.pages = grow(h.pages, n)
		h.acc |= hash512(h.pages[done:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(units))), 8*len(units)), prev, fold)
		h.foldEnd()
		return
	}
	h.pages = grow(h.pages, n)
	h.acc |= hashPages(units, h.ps, h.pages[done:], &h.buf, !h.inRange)
}

// AddLE32 is Add for a prompt that arrives as little-endian u32 ids (the
// binary token list of docs/api.md): it sets tokens[i] to the id at
// le[4i:4i+4] for each i in [from, len(tokens)) and hashes the whole pages
// of tokens not yet hashed. For 64-unit pages on a CPU with AVX-512 the
// ids are widened and hashed in one pass (hash512Widen), so the hash does
// not read the widened ids back; otherwise it is u32le.Widen then Add.
// tokens[:from] must hold the ids earlier calls set, le at least
// 4·len(tokens) bytes. The ids are in [0, 2^32-1] by construction.
func (h *PageHasher) AddLE32(tokens []int64, from int, le []byte) {
	le = le[:4*len(tokens)]
	if h.ps == 64 && useHash512 {
		// Up to the next page boundary the ordinary way, then whole pages
		// fused, when the hashed pages end exactly where the ids do.
		b := min((from+63)/64*64, len(tokens))
		u32le.Widen(tokens[from:b], le[4*from:])
		h.Add(tokens[:b])
		if k := (len(tokens) - b) / 64; k > 0 && len(h.pages)*64 == b {
			prev, fold := h.foldStart()
			h.pages = grow(h.pages, k)
			hash512Widen(h.pages[b/64:], tokens[b:], le[4*b:], prev, fold)
			h.foldEnd()
			b += 64 * k
		}
		from = b
	}
	u32le.Widen(tokens[from:], le[4*from:])
	h.Add(tokens)
}

// HashLE32 hashes the whole pages of a binary prompt's little-endian u32
// ids that earlier calls did not, without keeping the 8-byte ids: le is the
// prompt so far (each call's le extends the previous call's), and Chain is
// then ChainLE32. For 64-unit pages on a CPU with AVX-512 each page's ids
// are widened in registers only (hash512LE32), and folded as they are
// hashed after Seed; otherwise each page is widened into a buffer of its
// own. The ids are in [0, 2^32-1] by construction.
func (h *PageHasher) HashLE32(le []byte) {
	done := len(h.pages)
	n := len(le)/4/h.ps - done
	if n <= 0 {
		return
	}
	src := le[4*done*h.ps : 4*(done+n)*h.ps]
	if h.ps == 64 {
		prev, fold := h.foldStart()
		h.pages = grow(h.pages, n)
		hash512LE32(h.pages[done:], src, prev, fold)
		h.foldEnd()
		return
	}
	h.pages = grow(h.pages, n)
	page := make([]int64, h.ps)
	for i := range n {
		u32le.Widen(page, src[4*h.ps*i:])
		h.pages[done+i] = spec.PrefixHash(xxh3.Hash(pageBytes(unitsOf(page), &h.buf)))
	}
}

// ChainLE32 is the prefix-hash chain of the binary prompt le (little-endian
// u32 ids, len(le) a multiple of 4) in the namespace extra, for pages of
// h.PageSize(): what Chain gives for the decoded ids. It hashes the pages
// HashLE32 did not see and folds them, so h holds the chain afterwards and
// is not to be fed again.
func (h *PageHasher) ChainLE32(le []byte, extra spec.ExtraKey) []spec.PrefixHash {
	seed := h.seedOf(extra)
	if !h.unseed(seed) {
		fresh, _ := NewPageHasher(h.ps, h.pages)
		return fresh.ChainLE32(le, extra)
	}
	h.HashLE32(le)
	h.foldFrom(seed)
	if h.pages == nil {
		return []spec.PrefixHash{} // as TokenKeyChain's: empty, not absent
	}
	return h.pages
}

// Join appends the page hashes next computed to h's, so a long prompt's
// halves can be hashed on two goroutines: next must have been fed the
// tokens from token index at on (its first page is the prompt's page
// at/ps), and at must be where h's hashed pages end. It reports false,
// changing nothing, when at is not h.Pages()·PageSize() or the page sizes
// differ, or when next has folded pages of its own (it was seeded).
func (h *PageHasher) Join(next *PageHasher, at int) bool {
	if next.ps != h.ps || at != len(h.pages)*h.ps || next.folded > 0 {
		return false
	}
	h.pages = append(h.pages, next.pages...)
	h.acc |= next.acc
	h.inRange = h.inRange && next.inRange
	return true
}

// Chain is TokenKeyChain(field, tokens, extra, h.PageSize()) for the whole
// prompt tokens, whose prefixes were given to Add: it hashes the pages Add
// did not see, checks every id, and folds the page hashes in place (so h
// holds the chain afterwards and is not to be fed again).
func (h *PageHasher) Chain(field string, tokens []int64, extra spec.ExtraKey) (spec.RadixKey, []spec.PrefixHash, error) {
	h.Add(tokens)
	units := unitsOf(tokens)
	if !h.inRange && h.acc|orUnits(units[len(h.pages)*h.ps:]) > math.MaxUint32 {
		return spec.RadixKey{}, nil, ref.CheckTokens(field, tokens)
	}
	seed := h.seedOf(extra)
	if !h.unseed(seed) {
		fresh, _ := NewPageHasher(h.ps, h.pages)
		fresh.inRange = h.inRange
		return fresh.Chain(field, tokens, extra)
	}
	h.foldFrom(seed)
	chain := h.pages
	if chain == nil {
		chain = []spec.PrefixHash{} // as TokenKeyChain's: empty, not absent
	}
	return spec.RadixKey{Units: units, Extra: extra}, chain, nil
}

// foldStart is what a 64-unit page kernel hashing h's next pages is
// given: the chain's last hash and, after Seed, to fold. The pages before
// are folded first (a join may have appended unfolded ones), so the kernel
// folds on from them; foldEnd records its pages as folded.
func (h *PageHasher) foldStart() (prev uint64, fold bool) {
	if h.seeded {
		h.foldFrom(h.seed)
	}
	return h.last(h.seed), h.seeded
}

// foldEnd records the pages a kernel foldStart prepared just hashed as
// folded, when it folded them.
func (h *PageHasher) foldEnd() {
	if h.seeded {
		h.folded = len(h.pages)
	}
}

// grow is pages extended by n entries for the hashing to set: within its
// capacity without clearing them (every one is written next; clearing a
// 240K-token prompt's 30 KB measured 3 µs of a 100 µs score).
func grow(pages []spec.PrefixHash, n int) []spec.PrefixHash {
	if len(pages)+n <= cap(pages) {
		return pages[:len(pages)+n]
	}
	return append(pages, make([]spec.PrefixHash, n)...)
}

// unseed makes h fold from seed, the chain's true seed, from here on: a
// hasher Seed gave another namespace stops folding as it hashes. It
// reports false when pages are folded from that other seed already (their
// page hashes are gone, and the prompt must be hashed again).
func (h *PageHasher) unseed(seed uint64) bool {
	if !h.seeded || seed == h.seed {
		return true
	}
	h.seeded = false
	return h.folded == 0
}

// foldFrom folds the pages not yet folded into the chain, from the seed
// when none is.
func (h *PageHasher) foldFrom(seed uint64) {
	prev := h.last(seed)
	for i := h.folded; i < len(h.pages); i++ {
		prev = foldHash(prev, uint64(h.pages[i]))
		h.pages[i] = spec.PrefixHash(prev)
	}
	h.folded = len(h.pages)
}

// last is the chain's last folded hash, or seed when none is.
func (h *PageHasher) last(seed uint64) uint64 {
	if h.folded == 0 {
		return seed
	}
	return uint64(h.pages[h.folded-1])
}

// unitsOf is tokens as units, without a copy: a token id in [0, 2^32-1]
// is the unit of the same value (§1.1).
func unitsOf(tokens []int64) []spec.Unit {
	if len(tokens) == 0 {
		return []spec.Unit{}
	}
	return unsafe.Slice((*spec.Unit)(unsafe.Pointer(unsafe.SliceData(tokens))), len(tokens))
}

// hashPages sets out[i] to page i's unseeded hash pᵢ (not yet folded) for
// each of len(out) whole pages of ps units and, when check is set, returns
// the OR of every unit it hashed (a token id past 2^32-1 sets a high bit;
// 0 without check). Each page is checked as it is hashed, while it is in
// cache. 64-unit pages on an AVX-512 CPU take hash512 instead (Add).
//
// The page hashes could be computed in two halves at once; measured on
// this project's 2-vCPU VMs, waking the second core costs more than half
// of a 240K-token prompt's hashing (docs/perf.md, "The chain in
// parallel"), so they are not.
func hashPages(units []spec.Unit, ps int, out []spec.PrefixHash, buf *[]byte, check bool) uint64 {
	var acc uint64
	for i := range out {
		page := units[i*ps : (i+1)*ps : (i+1)*ps]
		if check {
			acc |= orUnits(page)
		}
		out[i] = spec.PrefixHash(xxh3.Hash(pageBytes(page, buf)))
	}
	return acc
}

// hash512Generic is hash512 without the vector code: one library call a
// page, the OR of its units, and the fold with fold.
func hash512Generic(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) uint64 {
	var acc uint64
	for j := 0; j < 512*len(dst); j += 8 {
		acc |= binary.LittleEndian.Uint64(src[j:])
	}
	hashEach(dst, func(i int) []byte { return src[512*i : 512*i+512] }, prev, fold)
	return acc
}

// hash512WidenGeneric is hash512Widen without the vector code: the
// widening (u32le.Widen), then one library hash a page.
func hash512WidenGeneric(dst []spec.PrefixHash, units []int64, src []byte, prev uint64, fold bool) {
	units = units[:64*len(dst)]
	u32le.Widen(units, src)
	var buf []byte
	hashEach(dst, func(i int) []byte { return pageBytes(unitsOf(units[64*i:64*i+64]), &buf) }, prev, fold)
}

// hash512LE32Generic is hash512LE32 without the vector code: each page's
// ids widened into one 64-unit buffer and hashed by the library.
func hash512LE32Generic(dst []spec.PrefixHash, src []byte, prev uint64, fold bool) {
	var page [64]int64
	var buf []byte
	hashEach(dst, func(i int) []byte {
		u32le.Widen(page[:], src[256*i:])
		return pageBytes(unitsOf(page[:]), &buf)
	}, prev, fold)
}

// hashEach sets dst[i] to the library's XXH3-64 of page(i) or, with fold,
// to the chain hash from h₋₁ = prev: the generic kernels' shared loop.
func hashEach(dst []spec.PrefixHash, page func(i int) []byte, prev uint64, fold bool) {
	for i := range dst {
		p := xxh3.Hash(page(i))
		if fold {
			prev = foldHash(prev, p)
			p = prev
		}
		dst[i] = spec.PrefixHash(p)
	}
}

// pageBytes is a page's units as the little-endian bytes the hash is
// defined over: the units themselves on a little-endian machine, packed
// into *buf otherwise.
func pageBytes(page []spec.Unit, buf *[]byte) []byte {
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(page))), 8*len(page))
	}
	if cap(*buf) < 8*len(page) {
		*buf = make([]byte, 8*len(page))
	}
	b := (*buf)[:8*len(page)]
	for j, u := range page {
		binary.LittleEndian.PutUint64(b[8*j:], u)
	}
	return b
}

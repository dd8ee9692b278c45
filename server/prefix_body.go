package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/internal/u32le"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// This file decodes the bodies of the prefix routes that carry a token
// list (score, match, insert) at memory speed (docs/decisions.md, "The
// prefix routes decode in one pass"): a JSON body in one pass that
// validates, counts and decodes, and a binary token list (little-endian
// u32) under its own content type with the other members in the query.

// TokensContentType is the media type of a binary token list: the body is
// the tokens as little-endian unsigned 32-bit integers, 4 bytes each, and
// the request's other members are query parameters (docs/api.md, "Binary
// token lists").
const TokensContentType = "application/vnd.kvtwin.tokens+u32le"

// prefixMember is one member a token-carrying prefix body may have.
type prefixMember uint16

const (
	mTokens prefixMember = 1 << iota
	mExtra
	mSalt
	mPools
	mExact
	mGroup
	mTier
	mLock
	mPriority
)

// prefixMembers names the members, as JSON and as query parameters.
var prefixMembers = []struct {
	name string
	m    prefixMember
}{
	{"tokens", mTokens}, {"extra", mExtra}, {"salt", mSalt}, {"pools", mPools}, {"exact", mExact},
	{"group", mGroup}, {"tier", mTier}, {"lock", mLock}, {"priority", mPriority},
}

// memberOf is the member named name, or 0.
func memberOf(name []byte) prefixMember {
	for _, pm := range prefixMembers {
		if string(name) == pm.name {
			return pm.m
		}
	}
	return 0
}

// tokenLimits are the bounds decodeTokensJSON keeps: the request's token
// limit and the JSON depth limit (the full path's), and the list length in
// bytes from which it is read as two runs in one loop (0: never;
// splitScan). A list read that way also has its pages hashed, run by run,
// for each page size in hash (prefixFields.pre).
type tokenLimits struct {
	maxTokens, maxDepth, splitBytes int
	hash                            []int
}

// splitTokenBytes is where a JSON token list is read as two runs: below
// it the two comma counts and the pair loop's start cost about what the
// overlap saves.
const splitTokenBytes = 4 << 10

// prefixFields is a token-carrying body decoded: the union of the members
// of the score, match and insert bodies, and which of them were present.
type prefixFields struct {
	seen     prefixMember
	tokens   []int64
	extra    *string
	salt     *string
	pools    []string
	exact    bool
	group    int64
	tier     string
	lock     bool
	priority int
	pre      []*prefix.PageHasher // a binary score's page hashes (tokenStream)
	le       []byte               // a binary score's body, its ids read where they lie (tokenStream.lazy)
}

// tokenBody is a request body the one-pass decoders fill: the score, match
// and insert bodies, each admitting its own members.
type tokenBody interface {
	members() prefixMember
	fill(f *prefixFields)
	// keepsTokens reports whether the route may keep the token list past
	// the request (an insert's tree may), so it never gets a recycled one.
	keepsTokens() bool
}

func (*scoreBody) keepsTokens() bool  { return false }
func (*matchBody) keepsTokens() bool  { return false }
func (*insertBody) keepsTokens() bool { return true }

// tokenBuf is a token list to decode into: a recycled one when the route
// keeps none (its capacity reused), else nil.
func (s *Server) tokenBuf(tb tokenBody) []int64 {
	if tb.keepsTokens() {
		return nil
	}
	if p, ok := s.tokenBufs.Get().(*[]int64); ok {
		return (*p)[:0]
	}
	return nil
}

// recycleTokens hands a route's token list back once its answer no longer
// needs it.
func (s *Server) recycleTokens(tb tokenBody, toks []int64) {
	if tb.keepsTokens() || cap(toks) == 0 {
		return
	}
	toks = toks[:0]
	s.tokenBufs.Put(&toks)
}

// sized is dst when it holds n tokens, else a new list of capacity n.
func sized(dst []int64, n int) []int64 {
	if cap(dst) >= n {
		return dst[:0]
	}
	return make([]int64, 0, n)
}

func (*scoreBody) members() prefixMember {
	return mTokens | mExtra | mSalt | mPools | mExact | mGroup | mTier
}

func (b *scoreBody) fill(f *prefixFields) {
	*b = scoreBody{Tokens: f.tokens, Extra: f.extra, Salt: f.salt, Pools: f.pools, Exact: f.exact, Group: f.group, Tier: f.tier, pre: f.pre, le: f.le}
}

func (*matchBody) members() prefixMember { return mTokens | mExtra | mSalt | mLock }

func (b *matchBody) fill(f *prefixFields) {
	*b = matchBody{Tokens: f.tokens, Extra: f.extra, Salt: f.salt, Lock: f.lock}
}

func (*insertBody) members() prefixMember { return mTokens | mExtra | mSalt | mPriority }

func (b *insertBody) fill(f *prefixFields) {
	*b = insertBody{Tokens: f.tokens, Extra: f.extra, Salt: f.salt, Priority: f.priority}
}

// decodeTokensJSON decodes body in one pass when it is a body this decoder
// takes: one JSON object of the allowed members, each at most once, with
// tokens a list of at most lim.maxTokens plain decimal integers in [0,
// 4294967295], strings without escapes, and nothing but whitespace after
// it. For such a body, the gate, the token count and catalog.DecodeStrict
// accept it and decode the same values; ok is false for every other body
// (invalid, or merely unusual: escapes, null, duplicate or differently
// cased members, a fraction, a sign on a token), which the caller then
// sends down that full path for its answer. So the errors stay the full
// path's, byte for byte, and this function need not know any of them.
//
// dst, when its capacity suffices, receives the tokens.
func decodeTokensJSON(body []byte, allowed prefixMember, lim tokenLimits, dst []int64) (f prefixFields, ok bool) {
	f.tokens = dst[:0:cap(dst)]
	if lim.maxDepth < 2 { // an object holding an array is depth 2
		return f, false
	}
	p := tokenScan{b: body}
	p.ws()
	if !p.eat('{') {
		return f, false
	}
	p.ws()
	if p.eat('}') {
		return f, false // no tokens: the full path says which member is missing
	}
	for {
		p.ws()
		key, ok := p.plainString()
		if !ok {
			return f, false
		}
		m := memberOf(key)
		if m == 0 || m&allowed == 0 || f.seen&m != 0 {
			return f, false
		}
		f.seen |= m
		p.ws()
		if !p.eat(':') {
			return f, false
		}
		p.ws()
		if !p.member(m, &f, lim) {
			return f, false
		}
		p.ws()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return f, false
		}
	}
	p.ws()
	return f, p.i == len(body) && f.seen&mTokens != 0
}

// tokenScan is a cursor over a body for decodeTokensJSON.
type tokenScan struct {
	b []byte
	i int
}

func (p *tokenScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *tokenScan) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters, valid
// UTF-8 (encoding/json would replace invalid bytes), and returns its bytes.
func (p *tokenScan) plainString() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// member decodes the value of member m into f.
func (p *tokenScan) member(m prefixMember, f *prefixFields, lim tokenLimits) bool {
	switch m {
	case mTokens:
		return p.tokens(f, lim)
	case mExtra, mSalt, mTier:
		s, ok := p.plainString()
		if !ok {
			return false
		}
		v := string(s)
		switch m {
		case mExtra:
			f.extra = &v
		case mSalt:
			f.salt = &v
		default:
			f.tier = v
		}
		return true
	case mPools:
		return p.pools(f)
	case mExact, mLock:
		v, ok := p.boolean()
		if m == mExact {
			f.exact = v
		} else {
			f.lock = v
		}
		return ok
	case mGroup:
		v, ok := p.integer(math.MinInt64, math.MaxInt64)
		f.group = v
		return ok
	case mPriority:
		v, ok := p.integer(math.MinInt, math.MaxInt)
		f.priority = int(v)
		return ok
	}
	return false
}

// tokens reads the token list: '[' plain integers ']'. Its capacity is
// the commas left in the body (at least the count), bounded by
// maxTokens+1, so a list is sized once and never past the limit. A list
// of at least lim.splitBytes is read as two runs in one loop, split at a
// comma near its middle (splitScan).
func (p *tokenScan) tokens(f *prefixFields, lim tokenLimits) bool {
	if !p.eat('[') {
		return false
	}
	p.ws()
	if p.eat(']') {
		if f.tokens == nil { // empty and not nil: the full path's []
			f.tokens = []int64{}
		}
		return true
	}
	if lim.splitBytes > 0 && len(p.b)-p.i >= lim.splitBytes {
		if sp := p.i + (len(p.b)-p.i)/2; sp < len(p.b) {
			if c := bytes.IndexByte(p.b[sp:min(sp+64, len(p.b))], ','); c >= 0 {
				return p.splitScan(f, lim, sp+c)
			}
		}
	}
	return p.oneRun(f, lim.maxTokens)
}

// oneRun reads the token list from p.i to its ']' in one run.
func (p *tokenScan) oneRun(f *prefixFields, maxTokens int) bool {
	toks := sized(f.tokens, min(bytes.Count(p.b[p.i:], []byte{','})+1, maxTokens+1))
	toks, next, end, ok := scanTokens(p.b, p.i, -1, toks, maxTokens)
	if !ok || !end {
		return false
	}
	f.tokens, p.i = toks, next
	return true
}

// splitScan reads the token list from p.i as two runs interleaved in one
// loop (scanPair), each finished by scanTokens: the first up to the comma
// at sp, the second from after it to the ']'. The first run's tokens are
// exactly its commas plus one, so the runs fill adjacent parts of one
// list. Each run then hashes its whole pages for the page sizes of
// lim.hash while they are in cache, and the two are joined after the page
// they share (joinHashers). If the list ends before sp (the split fell in
// a later member), the first run has read it whole and the second's work
// is dropped.
func (p *tokenScan) splitScan(f *prefixFields, lim tokenLimits, sp int) bool {
	maxTokens := lim.maxTokens
	cA := bytes.Count(p.b[p.i:sp], []byte{','})
	cB := bytes.Count(p.b[sp+1:], []byte{','})
	if cA+1 > maxTokens {
		// Too long, or the split fell past the list's end and counted
		// other members' commas: one run tells which.
		return p.oneRun(f, maxTokens)
	}
	toks := sized(f.tokens, min(cA+1+cB+1, maxTokens+1))
	type run struct {
		toks    []int64
		next    int
		end, ok bool
		hashers []*prefix.PageHasher
	}
	second := tokenScan{b: p.b, i: sp + 1}
	second.ws()
	x := tokenCursor{i: p.i, stop: sp, limit: min(cA+1, maxTokens), toks: toks[: 0 : cA+1]}
	y := tokenCursor{i: second.i, stop: -1, limit: min(cap(toks)-(cA+1), maxTokens-(cA+1)), toks: toks[cA+1 : cA+1]}
	scanPair(p.b, &x, &y)
	var a, bh run
	a.toks, a.next, a.end, a.ok = scanTokens(p.b, x.i, sp, x.toks, maxTokens)
	if a.ok {
		a.hashers = tokenHashers(lim.hash, a.toks, 0, cap(toks)) // joinHashers completes it
	}
	bh.toks, bh.next, bh.end, bh.ok = scanTokens(p.b, y.i, -1, y.toks, maxTokens-(cA+1))
	if bh.ok && bh.end {
		bh.hashers = tokenHashers(lim.hash, bh.toks, cA+1, len(bh.toks))
	}
	switch {
	case !a.ok:
		return false
	case a.end: // the list ended before the split
		f.tokens, p.i, f.pre = a.toks, a.next, a.hashers
		return true
	case !bh.ok || !bh.end || len(a.toks) != cA+1:
		return false
	}
	// The second run's tokens are at most its commas plus one and at most
	// maxTokens-(cA+1), so they fill its room in place; a list that did not
	// would have moved, and is left to the full path rather than joined.
	if len(bh.toks) > cap(toks)-(cA+1) {
		return false
	}
	f.tokens, p.i = toks[:cA+1+len(bh.toks)], bh.next
	f.pre = joinHashers(a.hashers, bh.hashers, f.tokens, cA+1)
	return true
}

// tokenHashers hashes the whole pages of toks, the prompt's tokens from
// index at on, for each page size of sizes: a page is the prompt's, so
// hashing starts at the first page boundary at or after at. Each hasher
// has room for the pages of room tokens from at, so one that is completed
// later (joinHashers) does not grow.
func tokenHashers(sizes []int, toks []int64, at, room int) []*prefix.PageHasher {
	var hs []*prefix.PageHasher
	for _, ps := range sizes {
		skip := (ps - at%ps) % ps
		h, err := prefix.NewPageHasher(ps, make([]spec.PrefixHash, 0, max(room-skip, 0)/ps))
		if err != nil {
			return nil // a pool's page size is >= 1
		}
		h.InRange() // scanTokens keeps ids within [0, 2^32-1]
		if skip <= len(toks) {
			h.Add(toks[skip:])
		}
		hs = append(hs, h)
	}
	return hs
}

// joinHashers is the first run's hashers (tokenHashers from 0) completed
// for the whole list toks: each hashes the page the runs share, then
// takes the second run's pages (tokenHashers from at). Nil, so that the
// score hashes the prompt itself, if any join is refused.
func joinHashers(first, second []*prefix.PageHasher, toks []int64, at int) []*prefix.PageHasher {
	if len(first) != len(second) {
		return nil
	}
	for k, h := range first {
		ps := h.PageSize()
		b := min((at+ps-1)/ps*ps, len(toks))
		h.Add(toks[:b])
		if b%ps == 0 && !h.Join(second[k], b) {
			return nil
		}
	}
	return first
}

// scanTokens appends to toks the tokens of b from i, each a plain decimal
// integer in [0, 4294967295] followed by ',' or ']' (JSON whitespace
// around), at most maxTokens of them. It returns after the ']' (end) or,
// when stop >= 0, once it reaches the ',' at stop (not end), with next the
// index after it; ok is false for anything else.
func scanTokens(b []byte, i, stop int, toks []int64, maxTokens int) (out []int64, next int, end, ok bool) {
	for {
		start := i
		var v uint64
		if n := digits8(b[i:]); n > 0 && n < 8 { // up to 7 digits, 8 bytes at once
			v = parse8(binary.LittleEndian.Uint64(b[i:]), n)
			i += n
		} else { // a long token, or the body's last 8 bytes
			for i < len(b) {
				d := b[i] - '0'
				if d > 9 {
					break
				}
				v = v*10 + uint64(d)
				i++
			}
		}
		if n := i - start; n == 0 || n > 10 || n > 1 && b[start] == '0' || v > math.MaxUint32 {
			return toks, i, false, false
		}
		if len(toks) >= maxTokens {
			return toks, i, false, false // the full path answers 413 from its count
		}
		toks = append(toks, int64(v))
		if i < len(b) && b[i] == ',' && i != stop { // the common case: a bare comma
			i++
			if i < len(b) && b[i] <= ' ' {
				i = skipWS(b, i)
			}
			continue
		}
		p := tokenScan{b: b, i: i}
		p.ws()
		switch {
		case p.eat(']'):
			return toks, p.i, true, true
		case p.i == stop:
			return toks, stop + 1, false, true
		case !p.eat(','):
			return toks, p.i, false, false
		}
		p.ws()
		i = p.i
	}
}

// tokenCursor is one run of a token list being read by scanPair: where it
// is in the body, the tokens read so far, how many it may hold in place,
// and the comma it must stop at (-1: none).
type tokenCursor struct {
	i, stop, limit int
	toks           []int64
}

// scanPair advances two cursors over the same body in one loop, a token
// from each per round, while both meet the common case of scanTokens: up
// to 7 digits with no leading zero, a bare comma after them that is not
// the cursor's stop (then an optional space), and room in place. Reading
// one token waits on the end of the one before, so a single run is bound
// by that chain; two independent runs interleaved keep the core busy with
// both, with no second goroutine (docs/perf.md, "Two runs in one loop").
// A token outside the common case is read alone (step) and the loop goes
// on; it returns when either cursor reaches its stop, its ']', its limit
// or a token scanTokens refuses, leaving both where scanTokens then
// finishes each exactly as it would have from the start.
func scanPair(b []byte, x, y *tokenCursor) {
	for {
		xi, yi, xt, yt := x.i, y.i, x.toks, y.toks
		for xi+8 <= len(b) && yi+8 <= len(b) && len(xt) < x.limit && len(yt) < y.limit {
			xw, yw := binary.LittleEndian.Uint64(b[xi:]), binary.LittleEndian.Uint64(b[yi:])
			xn, yn := digitsIn(xw), digitsIn(yw)
			if xn == 0 || xn == 8 || yn == 0 || yn == 8 || xn > 1 && byte(xw) == '0' || yn > 1 && byte(yw) == '0' {
				break
			}
			xe, ye := xi+xn, yi+yn
			if b[xe] != ',' || xe == x.stop || b[ye] != ',' || ye == y.stop {
				break
			}
			xt, yt = append(xt, int64(parse8(xw, xn))), append(yt, int64(parse8(yw, yn)))
			xi, yi = xe+1, ye+1
			if xi < len(b) && b[xi] == ' ' {
				xi++
			}
			if yi < len(b) && b[yi] == ' ' {
				yi++
			}
		}
		x.i, y.i, x.toks, y.toks = xi, yi, xt, yt
		if !x.step(b) || !y.step(b) {
			x.i, y.i = skipWS(b, x.i), skipWS(b, y.i) // scanTokens starts at a token
			return
		}
	}
}

// step reads c's next token alone when the pair loop would not (a long
// token, whitespace, the body's last 8 bytes), with scanTokens told to
// stop at the comma after it, and reports whether c may go on pairing.
// It leaves c at that token, and reports false, when the token ends c's
// run (its stop, its ']'), is refused, or would pass c's limit:
// scanTokens then reads it again from c.i when it finishes the run.
func (c *tokenCursor) step(b []byte) bool {
	c.i = skipWS(b, c.i) // the pair loop skips one space at most
	if len(c.toks) >= c.limit {
		return false
	}
	if c.i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[c.i:])
		if n := digitsIn(w); n > 0 && n < 8 && (n == 1 || byte(w) != '0') && b[c.i+n] == ',' && c.i+n != c.stop {
			return true // the common case: the pair loop reads it
		}
	}
	comma := bytes.IndexByte(b[c.i:], ',')
	if comma < 0 || c.i+comma == c.stop {
		return false
	}
	comma += c.i
	toks, next, end, ok := scanTokens(b, c.i, comma, c.toks, c.limit)
	if !ok || end || next != comma+1 {
		return false
	}
	c.i, c.toks = next, toks
	return true
}

// skipWS is the index of the first byte of b from i on that is not JSON
// whitespace.
func skipWS(b []byte, i int) int {
	p := tokenScan{b: b, i: i}
	p.ws()
	return p.i
}

// digits8 is how many of b's first 8 bytes are ASCII digits before the
// first that is not (8 when all are), or 0 when b is shorter than 8. A
// byte is a digit when neither b - '0' nor b + 0x46 sets its top bit;
// borrows and carries cross a byte only out of a non-digit, so the bytes
// up to the first non-digit are judged exactly.
func digits8(b []byte) int {
	if len(b) < 8 {
		return 0
	}
	return digitsIn(binary.LittleEndian.Uint64(b))
}

// digitsIn is digits8 of the 8 bytes x holds, the first lowest.
func digitsIn(x uint64) int {
	m := ((x + 0x4646464646464646) | (x - 0x3030303030303030)) & 0x8080808080808080
	return bits.TrailingZeros64(m) / 8
}

// parse8 is the value of the n (1 to 8) ASCII digits in x's low bytes (the
// first digit lowest): shifted up so that zero bytes pad them on the left,
// then summed pairwise in three multiplies (Lemire's 8-digit parse).
func parse8(x uint64, n int) uint64 {
	x <<= 8 * (8 - n)
	x = (x & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
	x = (x & 0x00FF00FF00FF00FF) * 6553601 >> 16
	return (x & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
}

// pools reads a list of plain strings.
func (p *tokenScan) pools(f *prefixFields) bool {
	if !p.eat('[') {
		return false
	}
	f.pools = []string{}
	p.ws()
	if p.eat(']') {
		return true
	}
	for {
		p.ws()
		s, ok := p.plainString()
		if !ok {
			return false
		}
		f.pools = append(f.pools, string(s))
		p.ws()
		if p.eat(']') {
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}

func (p *tokenScan) boolean() (bool, bool) {
	switch {
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		return true, true
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		return false, true
	}
	return false, false
}

// integer reads a plain decimal integer in [lo, hi]: an optional '-', no
// leading zero, no fraction or exponent.
func (p *tokenScan) integer(lo, hi int64) (int64, bool) {
	start := p.i
	p.eat('-')
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if n := p.i - digits; n == 0 || n > 1 && p.b[digits] == '0' {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, false
	}
	return v, true
}

// checkTokensBinary reads a binary token list's other members from the
// query, each at most once and spelled as in the JSON body (true/false,
// decimal integers; pools comma-separated), and checks the body's length:
// a multiple of 4, and a count over maxTokens is the 413 of the JSON path,
// found before anything is sized. fillTokens then decodes the tokens.
func checkTokensBinary(body []byte, query url.Values, allowed prefixMember, maxTokens int) (prefixFields, *apiError) {
	var f prefixFields
	for key, vals := range query {
		m := memberOf([]byte(key))
		if m == 0 || m == mTokens || m&allowed == 0 {
			return f, binaryError(key, "unknown field", "a member of the route's body other than tokens, as a query parameter")
		}
		if len(vals) != 1 {
			return f, binaryError(key, fmt.Sprintf("given %d times", len(vals)), "at most once")
		}
		if aerr := f.setQuery(m, key, vals[0]); aerr != nil {
			return f, aerr
		}
		f.seen |= m
	}
	if len(body)%4 != 0 {
		return f, binaryError("tokens", fmt.Sprintf("%d bytes", len(body)), "a multiple of 4 bytes (little-endian u32 tokens)")
	}
	if n := len(body) / 4; n > maxTokens {
		return f, tooManyTokens(n, maxTokens)
	}
	return f, nil
}

// fillTokens decodes the tokens of a body checkTokensBinary passed, into
// dst when its capacity suffices.
func (f *prefixFields) fillTokens(body []byte, dst []int64) {
	n := len(body) / 4
	f.tokens = sized(dst, n)[:n]
	u32le.Widen(f.tokens, body)
	f.seen |= mTokens
}

// tokenStream decodes a binary token list while the body arrives and, for
// a hashed score, hashes its whole pages for the page sizes the score will
// chain (prefix.PageHasher): a long prompt's decoding and hashing then
// overlap its transfer, and the score that follows only folds the page
// hashes and walks the pools (docs/perf.md, "End to end"). A lazy stream
// (a hashed score of pools prefix.Registry.ScoreLE32 takes, no event
// index) keeps no 8-byte ids at all: its hashers read the u32 ids where
// they lie (PageHasher.HashLE32), and so does the score's walk. Its
// buffers are reserved from the body budget, since they are held while a
// client sends; the work per byte is bounded (a conversion and at most
// maxStreamHashers hashes), as the read's own is.
type tokenStream struct {
	n        int // the declared tokens
	fed      int // the tokens fed so far: len(toks) unless lazy
	lazy     bool
	toks     []int64
	hashers  []*prefix.PageHasher
	reserved int64
}

// streamTokenBytes is the smallest binary body decoded while it arrives:
// a shorter one arrives in one or two reads, leaving nothing to overlap.
const streamTokenBytes = 64 << 10

// maxStreamHashers bounds the page sizes hashed ahead for one score: more
// kinds of pool than this are hashed after the body, by the score.
const maxStreamHashers = 4

// streamTokens is the tokenStream for r's body when r sends a binary
// token list of a declared length from streamTokenBytes up to the token
// limit and its buffers fit the body budget; nil otherwise (the body is
// then decoded after it is read, as before, and every refusal stays that
// path's). The query is only peeked at here: checkTokensBinary still
// judges it once the body is in.
func (s *Server) streamTokens(r *http.Request, tb tokenBody) *tokenStream {
	cl := r.ContentLength
	if tb == nil || cl < streamTokenBytes || cl%4 != 0 || cl/4 > int64(s.cfg.Prefix.MaxRequestTokens) || !isTokensBody(r) {
		return nil
	}
	n := int(cl / 4)
	var sizes []int
	q := r.URL.Query()
	lazy := false
	if _, ok := tb.(*scoreBody); ok {
		if q.Get("exact") != "true" {
			var pools []string
			if v := q.Get("pools"); v != "" {
				pools = strings.Split(v, ",")
			}
			sizes = s.pools.HashedPageSizes(pools, maxStreamHashers)
			// Fewer sizes than the bound: each has its hasher, so
			// ScoreLE32 will not decline for want of one.
			lazy = len(sizes) > 0 && len(sizes) < maxStreamHashers && s.events == nil && s.pools.ScoresLE32(pools)
		}
	}
	ts := &tokenStream{n: n, lazy: lazy}
	if !lazy {
		ts.toks = sized(s.tokenBuf(tb), n)
	}
	want := 8 * int64(cap(ts.toks))
	for _, ps := range sizes {
		want += 8 * int64(n/ps)
	}
	// Only when the body would still fit beside them: taking the budget's
	// last room for buffers would refuse a body the old path reads.
	if !s.bodies.TryAcquire(want + cl + 1) {
		s.recycleTokens(tb, ts.toks)
		return nil
	}
	s.bodies.Release(cl + 1)
	ts.reserved = want
	// The namespace as checkTokensBinary will read it, so the page hashes
	// fold as they are hashed; a query it then refuses, or reads
	// otherwise, only costs the score a second hashing.
	extra := spec.ExtraKeyOf(queryPtr(q, "extra"), queryPtr(q, "salt"))
	for _, ps := range sizes {
		h, err := prefix.NewPageHasher(ps, make([]spec.PrefixHash, 0, n/ps))
		if err == nil { // a pool's page size is >= 1
			ts.hashers = append(ts.hashers, h.InRange().Seed(extra)) // u32 ids
		}
	}
	return ts
}

// queryPtr is the first value of the query parameter key, or nil when the
// query has none.
func queryPtr(q url.Values, key string) *string {
	if !q.Has(key) {
		return nil
	}
	v := q.Get(key)
	return &v
}

// feed decodes the whole tokens of body (the body so far) not yet decoded
// and hashes the pages they complete; bytes past the declared length are
// left to the read, which refuses them.
func (ts *tokenStream) feed(body []byte) {
	have, n := ts.fed, min(len(body)/4, ts.n)
	if n <= have {
		return
	}
	ts.fed = n
	if ts.lazy {
		for _, h := range ts.hashers {
			h.HashLE32(body[:4*n])
		}
		return
	}
	ts.toks = ts.toks[:n]
	// In blocks: the first hasher decodes and hashes each in one pass
	// (fast.PageHasher.AddLE32), and the others hash it while its 32 KiB
	// are in the first-level cache, so no hashing reads the list back from
	// memory.
	for at := have; at < n; {
		end := min(at+streamBlockTokens, n)
		if len(ts.hashers) == 0 {
			u32le.Widen(ts.toks[at:end], body[4*at:])
		} else {
			ts.hashers[0].AddLE32(ts.toks[:end], at, body)
		}
		for _, h := range ts.hashers[min(1, len(ts.hashers)):] {
			h.Add(ts.toks[:end])
		}
		at = end
	}
}

// streamBlockTokens is how many tokens tokenStream.feed decodes before the
// other hashers hash them: 32 KiB of 8-byte units.
const streamBlockTokens = 4096

// setQuery sets member m from its query parameter's value.
func (f *prefixFields) setQuery(m prefixMember, key, v string) *apiError {
	switch m {
	case mExtra:
		f.extra = &v
	case mSalt:
		f.salt = &v
	case mTier:
		f.tier = v
	case mPools:
		f.pools = []string{}
		if v != "" {
			f.pools = strings.Split(v, ",") // pool names hold no comma
		}
	case mExact, mLock:
		if v != "true" && v != "false" {
			return binaryError(key, strconv.Quote(v), "true or false")
		}
		if m == mExact {
			f.exact = v == "true"
		} else {
			f.lock = v == "true"
		}
	case mGroup, mPriority:
		bits := 64
		if m == mPriority {
			bits = strconv.IntSize
		}
		i, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return binaryError(key, strconv.Quote(v), fmt.Sprintf("a decimal integer of %d bits", bits))
		}
		if m == mGroup {
			f.group = i
		} else {
			f.priority = int(i)
		}
	}
	return nil
}

// binaryError is the 400 for a binary token request's bad member, with
// the canonical bad_json error object the JSON path gives a bad member.
func binaryError(field string, value any, bound string) *apiError {
	err := spec.Reject(catalog.ErrBadJSON, field, value, bound)
	return inputError(err, catalog.Canonical(struct{}{}, err))
}

// isTokensBody reports whether r sends a binary token list: its media type
// is TokensContentType, whatever parameters follow it.
func isTokensBody(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == TokensContentType
}

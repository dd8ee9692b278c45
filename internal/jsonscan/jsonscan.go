// Package jsonscan is a validating, single-pass JSON scanner that accepts
// exactly what encoding/json's json.Valid accepts. The serving surface
// reads large OpenAI requests with it: one pass validates the document and
// hands the few levels a caller reads to callbacks, so no second
// validation pass and no decoding is needed (docs/spec/admission-serving.md S2;
// docs/decisions.md "Preflight in one pass").
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
)

// Scanner is a validating, single-pass JSON scanner that accepts exactly
// what encoding/json's json.Valid accepts (the ref twin's gate): RFC 8259
// grammar, whitespace " \t\n\r", no UTF-8 check inside strings (json.Valid
// has none), and at most maxJSONDepth nested arrays and objects. It never
// allocates. The serving ops walk a request once with it: it validates
// everything and hands the levels an op reads to callbacks (members,
// elems), so no second pass is needed (docs/spec/admission-serving.md S2;
// docs/decisions.md "Preflight in one pass").
type Scanner struct {
	b        []byte
	i        int // next byte to read
	depth    int // open arrays and objects
	maxDepth int // 0 means maxJSONDepth
}

// maxJSONDepth is encoding/json's maxNestingDepth: json.Valid rejects a
// document nested deeper.
const maxJSONDepth = 10000

// Word-at-a-time string scanning (SWAR): lsb has one bit per byte.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stringStops marks the bytes of w (little-endian) that end a run of plain
// string bytes: '"', '\\' or a control byte below 0x20. A marked bit may
// be wrong only above a correct one, so the lowest mark is exact.
func stringStops(w uint64) uint64 {
	q := w ^ (lsb * '"')
	e := w ^ (lsb * '\\')
	return (((q - lsb) &^ q) | ((e - lsb) &^ e) | ((w - lsb*0x20) &^ w)) & msb
}

// nextStop is the index of the first '"', '\\' or control byte of b at or
// after i, or len(b).
func nextStop(b []byte, i int) int {
	// Two words per round: a JSON string's text is mostly long runs.
	for ; i+16 <= len(b); i += 16 {
		w := b[i : i+16 : i+16]
		m0 := stringStops(binary.LittleEndian.Uint64(w[:8]))
		m1 := stringStops(binary.LittleEndian.Uint64(w[8:]))
		if m0|m1 != 0 {
			if m0 != 0 {
				return i + bits.TrailingZeros64(m0)>>3
			}
			return i + 8 + bits.TrailingZeros64(m1)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// WS skips whitespace.
func (p *Scanner) WS() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

// At reports whether the next byte is c.
func (p *Scanner) At(c byte) bool { return p.i < len(p.b) && p.b[p.i] == c }

// str scans the string literal at Pos (a '"').
func (p *Scanner) str() bool {
	b, i := p.b, p.i+1
	for {
		i = nextStop(b, i)
		if i >= len(b) || b[i] < 0x20 {
			return false
		}
		if b[i] == '"' {
			p.i = i + 1
			return true
		}
		if i+1 >= len(b) { // a backslash: one escape
			return false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return false
			}
			i += 6
		default:
			return false
		}
	}
}

// digits skips a run of digits and reports whether there was one.
func (p *Scanner) digits() bool {
	start := p.i
	for p.i < len(p.b) && isDigit(p.b[p.i]) {
		p.i++
	}
	return p.i > start
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *Scanner) number() bool {
	if p.At('-') {
		p.i++
	}
	switch {
	case p.At('0'):
		p.i++
	case p.i < len(p.b) && isDigit(p.b[p.i]):
		p.digits()
	default:
		return false
	}
	if p.At('.') {
		p.i++
		if !p.digits() {
			return false
		}
	}
	if p.At('e') || p.At('E') {
		p.i++
		if p.At('+') || p.At('-') {
			p.i++
		}
		return p.digits()
	}
	return true
}

// lit scans the literal word (true, false or null).
func (p *Scanner) lit(word string) bool {
	if end := p.i + len(word); end > len(p.b) || string(p.b[p.i:end]) != word {
		return false
	}
	p.i += len(word)
	return true
}

// Value scans (validates) one value at Pos, whatever it is.
func (p *Scanner) Value() bool {
	if p.i >= len(p.b) {
		return false
	}
	switch p.b[p.i] {
	case '"':
		return p.str()
	case '{':
		return p.Members(nil)
	case '[':
		return p.Elems(nil)
	case 't':
		return p.lit("true")
	case 'f':
		return p.lit("false")
	case 'n':
		return p.lit("null")
	}
	return p.number()
}

// open enters the array or object at Pos.
func (p *Scanner) open() bool {
	p.depth++
	p.i++
	p.WS()
	if p.maxDepth > 0 {
		return p.depth <= p.maxDepth
	}
	return p.depth <= maxJSONDepth
}

// closeOrNext moves past a ',' (done false) or leaves an array or object at its closing byte c, else fails.
func (p *Scanner) closeOrNext(c byte) (done, ok bool) {
	p.WS()
	if p.At(',') {
		p.i++
		p.WS()
		return false, true
	}
	if p.At(c) {
		p.i++
		p.depth--
		return true, true
	}
	return false, false
}

// Members scans the object at Pos (a '{'). For each member, val gets the
// key's literal (quotes and escapes as written) with Pos at the value, and
// must scan the value (a nil val scans it with Value). It reports whether
// the object is valid.
func (p *Scanner) Members(val func(key []byte) bool) bool {
	if !p.open() {
		return false
	}
	if p.At('}') {
		p.i++
		p.depth--
		return true
	}
	for {
		start := p.i
		if !p.At('"') || !p.str() {
			return false
		}
		key := p.b[start:p.i]
		p.WS()
		if !p.At(':') {
			return false
		}
		p.i++
		p.WS()
		ok := false
		if val == nil {
			ok = p.Value()
		} else {
			ok = val(key)
		}
		if !ok {
			return false
		}
		if done, ok := p.closeOrNext('}'); done || !ok {
			return ok
		}
	}
}

// Elems scans the array at Pos (a '['). For element i, val is called with
// Pos at the element and must scan it (a nil val scans it with Value). It
// reports whether the array is valid.
func (p *Scanner) Elems(val func(i int) bool) bool {
	if !p.open() {
		return false
	}
	if p.At(']') {
		p.i++
		p.depth--
		return true
	}
	for i := 0; ; i++ {
		ok := false
		if val == nil {
			ok = p.Value()
		} else {
			ok = val(i)
		}
		if !ok {
			return false
		}
		if done, ok := p.closeOrNext(']'); done || !ok {
			return ok
		}
	}
}

// End reports whether only whitespace is left (json.Valid's trailing rule).
func (p *Scanner) End() bool {
	p.WS()
	return p.i == len(p.b)
}

// New returns a scanner at the start of b.
func New(b []byte) *Scanner { return &Scanner{b: b} }

// NewLimited returns a scanner at the start of b that fails past maxDepth
// nested arrays and objects (at most MaxDepthLimit): the scanner recurses
// once per level, so its stack is bounded by the limit, not by the input.
func NewLimited(b []byte, maxDepth int) *Scanner {
	return &Scanner{b: b, maxDepth: min(max(maxDepth, 1), maxJSONDepth)}
}

// Pos is the offset of the next byte to read.
func (p *Scanner) Pos() int { return p.i }

// Valid is json.Valid in one allocation-free pass.
func Valid(b []byte) bool {
	p := Scanner{b: b}
	p.WS()
	return p.Value() && p.End()
}

// KeyIs reports whether the key literal (quotes included) decodes to want.
// Keys with escapes are decoded (rare; Python's json.loads and the ref twin
// compare decoded keys).
func KeyIs(key []byte, want string) bool {
	if len(key) == len(want)+2 {
		return string(key[1:len(key)-1]) == want
	}
	// An escape is longer than the character it stands for, so only a
	// longer literal with a backslash can still decode to want.
	if len(key) < len(want)+2 || bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == want
}

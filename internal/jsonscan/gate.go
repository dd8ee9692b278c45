package jsonscan

// MaxDepthLimit is the deepest nesting a Gate may be configured to admit:
// encoding/json's own limit, past which json.Unmarshal fails anyway.
const MaxDepthLimit = maxJSONDepth

// ReasonDuplicate is Gate.Reason for a document CheckSchema refused for
// naming a member twice in one object.
const ReasonDuplicate = "member name given twice"

// Gate is the verdict of Check on one document: why it was refused, if it
// was.
type Gate struct {
	// Depth is the nesting depth reached when a document was refused for
	// being too deep, else 0.
	Depth int
	// Offset is where the document was refused, or -1 when it was accepted.
	Offset int
	// Reason says why it was refused ("" when accepted).
	Reason string
	// Member is the member given twice, when CheckSchema refused a
	// document for it (Offset is then its second key's quote).
	Member string
}

// OK reports whether the document was accepted.
func (g Gate) OK() bool { return g.Offset < 0 }

// Check validates b exactly as json.Valid does, and refuses nesting deeper
// than maxDepth arrays and objects, in one iterative pass: time linear in
// len(b), no allocation, and constant stack whatever the nesting (a
// recursive validator overflows its goroutine's stack on a few MB of "[",
// which no recover can catch). It is the gate every request body passes
// before anything recursive (encoding/json, the serving scanners) sees it.
// maxDepth must be in [1, MaxDepthLimit]; larger is treated as the limit.
func Check(b []byte, maxDepth int) Gate { return check(b, maxDepth, nil) }

// CheckSchema is Check that also refuses a member given twice in the
// objects s says are decoded member by member (SchemaOf the type the
// document decodes into), so no decoder behind the gate has a last-wins
// choice to make. A struct's members are the fields names set, as
// encoding/json matches them (case-insensitively), and a field set twice
// is met at its second name; a name that sets no field is left to the
// decoder, which refuses it as unknown. A map's keys are one member when
// they decode to the same string, as encoding/json decodes them (escapes
// resolved, invalid UTF-8 and lone surrogates as U+FFFD), met when the
// map closes. The refusal is the first a left-to-right scan meets. Objects
// inside values decoded whole (json.RawMessage, any) are data and are not
// checked. Work is O(n log n) in the names of one map and memory linear in
// the names of the maps open at once, both bounded by len(b). A nil s
// checks no names: it is Check.
func CheckSchema(b []byte, maxDepth int, s *Schema) Gate {
	if s == nil {
		return check(b, maxDepth, nil)
	}
	return check(b, maxDepth, &names{root: s})
}

func check(b []byte, maxDepth int, u *names) Gate {
	maxDepth = min(max(maxDepth, 1), MaxDepthLimit)
	var stack [MaxDepthLimit/64 + 1]uint64 // bit d set: level d is an object
	p := Scanner{b: b}
	p.WS()
	g := Gate{Offset: -1}
	refuse := func(reason string) Gate {
		g.Offset, g.Reason = p.i, reason
		return g
	}
	refuseDup := func() Gate {
		g.Offset, g.Reason, g.Member = u.dupAt, ReasonDuplicate, u.dupName
		return g
	}
	depth := 0
	for {
		// A value starts at p.i.
		if p.i >= len(b) {
			return refuse("unexpected end of input")
		}
		switch c := b[p.i]; c {
		case '{', '[':
			if depth == maxDepth {
				g.Depth = depth + 1
				return refuse("nesting too deep")
			}
			isObj := c == '{'
			if isObj {
				stack[depth/64] |= 1 << (depth % 64)
			} else {
				stack[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			p.i++
			p.WS()
			if p.At(c + 2) { // '}' is '{'+2, ']' is '['+2
				p.i++
				depth--
				break
			}
			u.open(depth-1, isObj)
			if isObj {
				if !p.namedKey(u, depth) {
					return refuse("invalid object key")
				}
				if u.dup() {
					return refuseDup()
				}
			}
			continue
		case '"':
			if !p.str() {
				return refuse("invalid string")
			}
		case 't', 'f', 'n':
			if !p.lit(literal(c)) {
				return refuse("invalid literal")
			}
		default:
			if !p.number() {
				return refuse("invalid value")
			}
		}
		// A value ended: close what it closes, or move to the next one.
		for {
			p.WS()
			if depth == 0 {
				if p.i != len(b) {
					return refuse("data after the top-level value")
				}
				return g
			}
			isObj := stack[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			if p.At(',') {
				p.i++
				p.WS()
				if isObj {
					if !p.namedKey(u, depth) {
						return refuse("invalid object key")
					}
					if u.dup() {
						return refuseDup()
					}
				}
				break
			}
			if (isObj && p.At('}')) || (!isObj && p.At(']')) {
				if u.close(depth, b) {
					return refuseDup()
				}
				p.i++
				depth--
				continue
			}
			return refuse("expected ',' or the closing bracket")
		}
	}
}

// namedKey scans an object key and its colon, leaving Pos at the value,
// and records the key's name in u (when u is not nil) for the object
// innermost at depth.
func (p *Scanner) namedKey(u *names, depth int) bool {
	start := p.i
	if !p.At('"') || !p.str() {
		return false
	}
	u.add(depth, p.b, start, p.i)
	p.WS()
	if !p.At(':') {
		return false
	}
	p.i++
	p.WS()
	return true
}

// literal is the JSON literal starting with c ('t', 'f' or 'n').
func literal(c byte) string {
	switch c {
	case 't':
		return "true"
	case 'f':
		return "false"
	}
	return "null"
}

package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
)

// names follows, for CheckSchema, the open containers a Schema describes
// (the outermost ones: below a value decoded whole nothing is followed)
// and the member names of their objects, to find a member given twice.
type names struct {
	root    *Schema
	frames  []nameFrame // the followed containers, outermost first
	spans   []nameSpan  // the names of their map objects, in document order
	decoded []byte      // the text of names whose literal is not their text
	order   []int       // scratch for sorting one object's names
	dupName string      // the member given twice, once one is found
	dupAt   int         // the offset of its second name
	hasDup  bool
}

// nameFrame is one followed container: its Schema, the Schema of the
// value being read in it and, for an object, the names read so far (a
// struct's as the set of fields they set, a map's in spans from span).
type nameFrame struct {
	s           *Schema
	next        *Schema
	obj         bool
	span, arena int
	last        int      // the id of the struct field set last (0: none)
	seen        uint64   // bit id-1: the struct's field id was set (ids <= 64)
	seenMore    []uint64 // the same, for a struct of more than 64 fields
}

// nameSpan is one name of a map object: its text is the document's
// src[off:end], or decoded[off:end] when inArena; its key literal starts
// at at.
type nameSpan struct {
	off, end, at int
	inArena      bool
}

// dup reports whether a member given twice was found.
func (u *names) dup() bool { return u != nil && u.hasDup }

// found records the member given twice.
func (u *names) found(name string, at int) {
	u.dupName, u.dupAt, u.hasDup = name, at, true
}

// valueSchema is the Schema of a value starting at depth (the containers
// open around it), nil when no followed container holds it.
func (u *names) valueSchema(depth int) *Schema {
	if depth == 0 {
		return u.root
	}
	if depth == len(u.frames) {
		return u.frames[depth-1].next
	}
	return nil
}

// open is called for a non-empty container opening at depth: it is
// followed when its Schema describes it (a struct, map or any for an
// object; a list or any for an array).
func (u *names) open(depth int, obj bool) {
	if u == nil {
		return
	}
	s := u.valueSchema(depth)
	if s == nil {
		return
	}
	switch {
	case obj && (s.kind == schemaStruct || s.kind == schemaMap || s.kind == schemaAny):
		fr := nameFrame{s: s, obj: true, span: len(u.spans), arena: len(u.decoded)}
		if s.kind == schemaStruct && len(s.order) > 64 {
			fr.seenMore = make([]uint64, (len(s.order)+63)/64)
		}
		u.frames = append(u.frames, fr)
	case !obj && (s.kind == schemaList || s.kind == schemaAny):
		u.frames = append(u.frames, nameFrame{s: s, next: s.elem})
	}
}

// add reads the key literal b[start:end] (quotes included) of the object
// innermost at depth, when that object is followed, and sets the Schema
// of its value. A struct field set a second time is found at once; a
// map's names are kept for close.
func (u *names) add(depth int, b []byte, start, end int) {
	if u == nil || depth != len(u.frames) {
		return
	}
	fr := &u.frames[depth-1]
	if fr.s.kind == schemaStruct {
		u.addField(fr, b, start, end)
		return
	}
	// A map's values, or any value: the names are kept for close.
	text, arena := u.decode(b, start, end)
	fr.next = fr.s.elem
	n := nameSpan{off: start + 1, end: end - 1, at: start}
	if arena {
		n.off, n.end, n.inArena = len(u.decoded)-len(text), len(u.decoded), true
	}
	u.spans = append(u.spans, n)
}

// addField reads the key literal b[start:end] of fr, a struct: the field
// it sets is found by its literal when that is the field's name (no
// escape to resolve: the usual case), else by its decoded text.
func (u *names) addField(fr *nameFrame, b []byte, start, end int) {
	f := fr.s.plainMember(b[start+1:end-1], fr.last)
	if f == nil {
		text, arena := u.decode(b, start, end)
		f = fr.s.member(text)
		if arena {
			u.decoded = u.decoded[:len(u.decoded)-len(text)] // a struct keeps no text
		}
	}
	if f == nil {
		fr.next = nil // an unknown member: the decoder refuses it
		return
	}
	fr.next, fr.last = f.s, f.id
	if fr.setField(f.id) {
		u.found(f.name, start)
	}
}

// setField marks field id set and reports whether it already was.
func (fr *nameFrame) setField(id int) bool {
	w, bit := &fr.seen, uint64(1)<<((id-1)%64)
	if fr.seenMore != nil {
		w = &fr.seenMore[(id-1)/64]
	}
	was := *w&bit != 0
	*w |= bit
	return was
}

// decode is the name the key literal b[start:end] stands for. A literal
// with no escape and no byte above ASCII is its own text; any other is
// decoded by encoding/json, the decoder behind the gate (escapes, and
// invalid UTF-8 and lone surrogates as U+FFFD), into u.decoded, so the
// two agree on which names are equal.
func (u *names) decode(b []byte, start, end int) (text []byte, arena bool) {
	text = b[start+1 : end-1]
	for _, c := range text {
		if c == '\\' || c >= 0x80 {
			var s string
			_ = json.Unmarshal(b[start:end], &s) // the literal was just validated: it decodes
			u.decoded = append(u.decoded, s...)
			return u.decoded[len(u.decoded)-len(s):], true
		}
	}
	return text, false
}

// text is n's decoded name.
func (u *names) text(src []byte, n nameSpan) []byte {
	if n.inArena {
		return u.decoded[n.off:n.end]
	}
	return src[n.off:n.end]
}

// close is called for a container closing at depth (the containers open,
// itself included). For a followed map object it reports whether the
// object holds a name twice, and records it: of several, the one whose
// second name comes first.
func (u *names) close(depth int, src []byte) bool {
	if u == nil || depth != len(u.frames) {
		return false
	}
	fr := u.frames[depth-1]
	u.frames = u.frames[:depth-1]
	if !fr.obj || fr.s.kind == schemaStruct {
		return false
	}
	obj := u.spans[fr.span:]
	second := -1       // index in obj of the earliest second name
	if len(obj) <= 8 { // a handful of names: compare every pair
		for j := 1; j < len(obj) && second < 0; j++ {
			for i := range j {
				if bytes.Equal(u.text(src, obj[i]), u.text(src, obj[j])) {
					second = j
					break
				}
			}
		}
	} else { // many: sort by (text, position) and compare neighbours
		u.order = u.order[:0]
		for i := range obj {
			u.order = append(u.order, i)
		}
		slices.SortFunc(u.order, func(i, j int) int {
			if c := bytes.Compare(u.text(src, obj[i]), u.text(src, obj[j])); c != 0 {
				return c
			}
			return i - j
		})
		for k := 1; k < len(u.order); k++ {
			i, j := u.order[k-1], u.order[k]
			if (second < 0 || j < second) && bytes.Equal(u.text(src, obj[i]), u.text(src, obj[j])) {
				second = j
			}
		}
	}
	if second >= 0 {
		u.found(string(u.text(src, obj[second])), obj[second].at)
	}
	// The closed object's names go, with their decoded text.
	u.spans, u.decoded = u.spans[:fr.span], u.decoded[:fr.arena]
	return second >= 0
}

package bounded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/internal/jsonscan"
)

// A JSON list costs far more decoded than written: `{},` is 3 bytes of
// text but a row struct of a hundred or more, so a document within its
// byte bound can still take gigabytes to decode. Limits.Lists bounds the
// number of values at given paths before anything is decoded, which makes
// the decoded size a stated multiple of the byte bound.

// segment is one step of a path: a member name ("*" is any) or an array
// element.
type segment struct {
	key  string
	elem bool
}

// parsePath splits "ops[].failures[]" into ops, [], failures, []; "[]" is
// the elements of the document itself.
func parsePath(p string) []segment {
	var segs []segment
	for _, part := range strings.Split(p, ".") {
		name := strings.TrimRight(part, "[]")
		if name != "" {
			segs = append(segs, segment{key: name})
		}
		for range (len(part) - len(name)) / 2 {
			segs = append(segs, segment{elem: true})
		}
	}
	return segs
}

// listWalker counts, over one pass of jsonscan, the values found at each
// bounded path, and descends only where some path may still match; the
// rest is skipped by the scanner without a step of bookkeeping.
type listWalker struct {
	b      []byte
	p      *jsonscan.Scanner
	paths  []string
	pats   [][]segment
	bounds []int
	counts []int
	path   []segment
	err    *Error
}

// checkLists refuses b, a JSON document already within its depth bound,
// when it holds more values at a path of lists than the path's bound, all
// occurrences together. Member names match as encoding/json matches them
// to struct fields: escapes decoded, case folded. A document that is not
// JSON is left to the caller's decoder.
func checkLists(b []byte, lists map[string]int) *Error {
	w := &listWalker{b: b, p: jsonscan.New(b)}
	for p, n := range lists {
		w.paths = append(w.paths, p)
		w.pats = append(w.pats, parsePath(p))
		w.bounds = append(w.bounds, n)
		w.counts = append(w.counts, 0)
	}
	w.p.WS()
	w.value()
	return w.err
}

// value scans the value at w.path, counting it where a path ends there.
func (w *listWalker) value() bool {
	live := false
	for i, pat := range w.pats {
		if !prefixMatches(pat, w.path) {
			continue
		}
		if len(pat) > len(w.path) {
			live = true
			continue
		}
		if w.counts[i]++; w.counts[i] > w.bounds[i] {
			line := 1 + bytes.Count(w.b[:w.p.Pos()], []byte{'\n'})
			w.err = &Error{Line: line, Found: fmt.Sprintf("more than %d values at %s", w.bounds[i], w.paths[i]),
				Want: fmt.Sprintf("at most %d", w.bounds[i]), Err: ErrTooMany}
			return false
		}
	}
	switch {
	case !live:
		return w.p.Value()
	case w.p.At('{'):
		return w.p.Members(func(key []byte) bool {
			w.path = append(w.path, segment{key: memberName(key)})
			ok := w.value()
			w.path = w.path[:len(w.path)-1]
			return ok
		})
	case w.p.At('['):
		return w.p.Elems(func(int) bool {
			w.path = append(w.path, segment{elem: true})
			ok := w.value()
			w.path = w.path[:len(w.path)-1]
			return ok
		})
	}
	return w.p.Value()
}

// prefixMatches reports whether path matches the first len(path) steps of pat.
func prefixMatches(pat, path []segment) bool {
	if len(path) > len(pat) {
		return false
	}
	for i, s := range path {
		p := pat[i]
		switch {
		case p.elem != s.elem:
			return false
		case !p.elem && p.key != "*" && !strings.EqualFold(p.key, s.key):
			return false
		}
	}
	return true
}

// memberName decodes a member's key literal (quotes included), as the
// decoder will before it matches the key to a field.
func memberName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1 : len(key)-1])
	}
	var s string
	if json.Unmarshal(key, &s) != nil {
		return ""
	}
	return s
}

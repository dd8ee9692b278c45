// Package hostile derives hostile request bodies from a valid one, for the
// suites, the fuzz target and `kvtwin soak`. Every numeric leaf is replaced
// by an extreme, every array emptied and grown to a byte budget, every
// object member dropped, duplicated or joined by an unknown one, and values
// nested to a depth limit. It is the generator of the
// hostile-input harness (equiv/hostile_test.go, `make hostile`) and of the
// fuzz target's numeric mutations; see docs/reliability.md.
package hostile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
)

// Extremes are the numbers every numeric leaf is replaced by: the edges of
// int32, uint32, float64's exact integers, int64 and float64, and a fraction.
var Extremes = []string{
	"0", "-1", "1", "2147483647", "2147483649", "4294967296", "9007199254740993",
	"2305843009213693952", "9223372036854775807", "-9223372036854775808", "1e308", "0.5",
}

// Variant is one hostile body with a name saying how it was derived, e.g.
// `$.layout.granule=9223372036854775807`.
type Variant struct {
	// Name is the JSON path and the mutation.
	Name string
	// Body is the mutated request body.
	Body []byte
}

// Options bound the variants generated from one body.
type Options struct {
	// MaxArrayBytes is the encoded size up to which an array is grown by
	// repeating its elements ("the longest the limits allow", scaled to the
	// run: the body limit in `make hostile`, less in `make test`).
	MaxArrayBytes int
	// Depth is the nesting depth of the nested variants (the gate's limit).
	Depth int
}

// node is a JSON value with its object members in their original order, so
// a member can be duplicated and the output stays deterministic.
type node struct {
	kind byte   // 'n' number, 's' string, 'b' bool or null literal, '{' object, '[' array
	raw  string // the literal of a scalar
	keys []string
	vals []*node
}

// Parse reads one JSON value into a tree. It recurses once per nesting
// level, so it is for trusted examples only.
func parse(body []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("hostile: trailing data after the example")
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &node{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		_, err := dec.Token() // the closing delimiter
		return n, err
	case json.Number:
		return &node{kind: 'n', raw: t.String()}, nil
	case string:
		b, _ := json.Marshal(t)
		return &node{kind: 's', raw: string(b)}, nil
	case bool:
		return &node{kind: 'b', raw: strconv.FormatBool(t)}, nil
	default:
		return &node{kind: 'b', raw: "null"}, nil
	}
}

// appendJSON encodes n.
func (n *node) appendJSON(b []byte) []byte {
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			kb, _ := json.Marshal(k)
			b = append(append(b, kb...), ':')
			b = n.vals[i].appendJSON(b)
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.appendJSON(b)
		}
		return append(b, ']')
	}
	return append(b, n.raw...)
}

// clone copies n deeply.
func (n *node) clone() *node {
	c := &node{kind: n.kind, raw: n.raw, keys: append([]string(nil), n.keys...)}
	for _, v := range n.vals {
		c.vals = append(c.vals, v.clone())
	}
	return c
}

// site is one place in the tree: its path and its node.
type site struct {
	path string
	n    *node
}

// sites lists every node of root in document order with its path.
func sites(root *node) []site {
	var out []site
	var walk func(path string, n *node)
	walk = func(path string, n *node) {
		out = append(out, site{path, n})
		for i, v := range n.vals {
			if n.kind == '{' {
				walk(path+"."+n.keys[i], v)
			} else {
				walk(fmt.Sprintf("%s[%d]", path, i), v)
			}
		}
	}
	walk("$", root)
	return out
}

// Variants yields the hostile variants of body, a valid request. Each is
// derived from a fresh copy, so a variant changes one thing.
func Variants(body []byte, opt Options) (iter.Seq[Variant], error) {
	root, err := parse(body)
	if err != nil {
		return nil, fmt.Errorf("hostile: the example does not parse: %w", err)
	}
	count := len(sites(root))
	return func(yield func(Variant) bool) {
		for i := range count {
			for _, v := range siteVariants(root, i, opt) {
				if !yield(v) {
					return
				}
			}
		}
	}, nil
}

// siteVariants derives the variants that change site i of a copy of root.
func siteVariants(root *node, i int, opt Options) []Variant {
	var out []Variant
	mutate := func(what string, f func(n *node)) {
		c := root.clone()
		s := sites(c)[i]
		f(s.n)
		out = append(out, Variant{Name: s.path + what, Body: c.appendJSON(nil)})
	}
	n := sites(root)[i].n
	switch n.kind {
	case 'n':
		for _, x := range Extremes {
			mutate("="+x, func(n *node) { n.raw = x })
		}
	case '[':
		mutate("=[]", func(n *node) { n.vals = nil })
		if len(n.vals) > 0 && opt.MaxArrayBytes > 0 {
			mutate("=longest", func(n *node) { grow(n, opt.MaxArrayBytes) })
		}
	case '{':
		for k := range n.keys {
			key := n.keys[k]
			mutate("-"+key, func(n *node) { drop(n, k) })
			mutate("+dup "+key, func(n *node) { n.keys = append(n.keys, key); n.vals = append(n.vals, n.vals[k].clone()) })
		}
		mutate("+unknown", func(n *node) {
			n.keys = append(n.keys, "zz_unknown")
			n.vals = append(n.vals, &node{kind: 'n', raw: "1"})
		})
	}
	if i > 0 && opt.Depth > 0 {
		mutate(fmt.Sprintf("=nested×%d", opt.Depth), func(n *node) { nest(n, opt.Depth) })
	}
	return out
}

// drop removes member k of object n.
func drop(n *node, k int) {
	n.keys = append(n.keys[:k:k], n.keys[k+1:]...)
	n.vals = append(n.vals[:k:k], n.vals[k+1:]...)
}

// grow repeats the elements of array n until its encoding reaches about limit bytes.
func grow(n *node, limit int) {
	elems := n.vals
	size := len(n.appendJSON(nil))
	per := max(1, (size-2)/len(elems)+1)
	want := limit / per
	for len(n.vals) < want {
		n.vals = append(n.vals, elems[len(n.vals)%len(elems)])
	}
}

// nest wraps the value of n in arrays so that it sits depth levels deep.
func nest(n *node, depth int) {
	inner := &node{kind: n.kind, raw: n.raw, keys: n.keys, vals: n.vals}
	for range depth - 1 {
		inner = &node{kind: '[', vals: []*node{inner}}
	}
	*n = *inner
}

// Nested returns depth opening brackets followed by depth closing ones: the
// body of the deep-nesting attack (issue: a stack overflow in a recursive
// validator), built without recursion.
func Nested(depth int) []byte {
	return []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

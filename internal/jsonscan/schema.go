package jsonscan

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// Schema is what CheckSchema knows of the Go value a document decodes
// into: which of its objects encoding/json decodes member by member into a
// struct or a map, and so must not name a member twice. A nil *Schema is a
// value decoded whole (json.RawMessage, any, a type with its own
// UnmarshalJSON, a scalar), whose objects are left alone: what they say is
// data, which an op may read with a foreign parser's rules.
type Schema struct {
	kind   schemaKind
	fields map[string]int // a struct's members by JSON name: their index in order
	order  []schemaField  // the same, in encoding/json's order
	elem   *Schema        // a map's values, a slice's or an array's elements
}

type schemaKind uint8

const (
	schemaStruct schemaKind = iota + 1 // an object of named fields
	schemaMap                          // an object of any names
	schemaList                         // an array
	schemaAny                          // any JSON value, every object a map (I-JSON's rule; the tests' checkUnique)
)

// schemaField is one field of a struct: the JSON name it is encoded as,
// and what its value decodes into.
type schemaField struct {
	name  string
	plain bool // name is printable ASCII without '"' or '\\': its JSON literal is itself
	id    int  // 1 + its index in order: names resolving to it are one member
	s     *Schema
}

// SchemaOf is the Schema of values of type t, following encoding/json's
// rules: exported fields under their tag or Go name (embedded structs'
// fields promoted, the shallowest or the only tagged one winning a
// clash), pointers followed, and a type that unmarshals itself opaque.
func SchemaOf(t reflect.Type) *Schema { return schemaOf(t, map[reflect.Type]*Schema{}) }

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func schemaOf(t reflect.Type, seen map[reflect.Type]*Schema) *Schema {
	for t.Kind() == reflect.Pointer {
		if unmarshals(t) {
			return nil
		}
		t = t.Elem()
	}
	if unmarshals(t) {
		return nil
	}
	if s, ok := seen[t]; ok { // a recursive type: the graph closes on itself
		return s
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &Schema{kind: schemaStruct, fields: map[string]int{}}
		seen[t] = s
		for _, f := range structFields(t) {
			s.fields[f.name] = len(s.order)
			s.order = append(s.order, schemaField{name: f.name, plain: plainName(f.name), id: len(s.order) + 1, s: schemaOf(f.typ, seen)})
		}
		return s
	case reflect.Map:
		s := &Schema{kind: schemaMap}
		seen[t] = s
		s.elem = schemaOf(t.Elem(), seen)
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return nil // []byte is a base64 string
		}
		s := &Schema{kind: schemaList}
		seen[t] = s
		s.elem = schemaOf(t.Elem(), seen)
		if s.elem == nil {
			return nil // a list of opaque values holds no object to check
		}
		return s
	}
	return nil
}

// plainName reports whether name is written in JSON as itself.
func plainName(name string) bool {
	for i := range len(name) {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// unmarshals reports whether values of type t (or *t) decode themselves.
func unmarshals(t reflect.Type) bool {
	if t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType) {
		return true
	}
	if t.Kind() != reflect.Pointer {
		p := reflect.PointerTo(t)
		return p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType)
	}
	return false
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name   string
	typ    reflect.Type
	depth  int  // embedding depth
	tagged bool // named by its tag
}

// structFields lists t's JSON fields, embedded structs' promoted, with
// encoding/json's dominance rule: of the fields sharing a name, the
// shallowest wins if it is alone at its depth or the only tagged one
// there; otherwise the name is dropped.
func structFields(t reflect.Type) []jsonField {
	var all []jsonField
	collectFields(t, 0, map[reflect.Type]bool{}, &all)
	byName := map[string][]jsonField{}
	var names []string
	for _, f := range all {
		if _, ok := byName[f.name]; !ok {
			names = append(names, f.name)
		}
		byName[f.name] = append(byName[f.name], f)
	}
	var out []jsonField
	for _, n := range names {
		if f, ok := dominant(byName[n]); ok {
			out = append(out, f)
		}
	}
	return out
}

func collectFields(t reflect.Type, depth int, visiting map[reflect.Type]bool, all *[]jsonField) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if name == "" && ft.Kind() == reflect.Struct {
				collectFields(ft, depth+1, visiting, all)
				continue
			}
			if !f.IsExported() && ft.Kind() != reflect.Struct {
				continue
			}
		} else if !f.IsExported() {
			continue
		}
		tagged := name != ""
		if !tagged {
			name = f.Name
		}
		*all = append(*all, jsonField{name: name, typ: f.Type, depth: depth, tagged: tagged})
	}
}

// dominant picks the field a name resolves to among fs, if any.
func dominant(fs []jsonField) (jsonField, bool) {
	top := fs[0].depth
	for _, f := range fs {
		top = min(top, f.depth)
	}
	var at []jsonField
	for _, f := range fs {
		if f.depth == top {
			at = append(at, f)
		}
	}
	if len(at) == 1 {
		return at[0], true
	}
	var tagged []jsonField
	for _, f := range at {
		if f.tagged {
			tagged = append(tagged, f)
		}
	}
	if len(tagged) == 1 {
		return tagged[0], true
	}
	return jsonField{}, false
}

// plainMember is the field whose name is exactly raw, a key literal's
// text, when that name needs no escape in JSON (so raw is also the
// decoded text); nil when none is. last is the id of the field set
// before: a canonical body names fields in order, so the few after it are
// tried first.
func (s *Schema) plainMember(raw []byte, last int) *schemaField {
	for i := last; i < min(last+4, len(s.order)); i++ {
		if f := &s.order[i]; f.plain && f.name == string(raw) {
			return f
		}
	}
	if i, ok := s.fields[string(raw)]; ok && s.order[i].plain {
		return &s.order[i]
	}
	return nil
}

// member is the field a decoded name sets in a struct Schema, matched as
// encoding/json matches it: exactly, else case-insensitively (the first
// such field in order); nil when none does.
func (s *Schema) member(name []byte) *schemaField {
	if i, ok := s.fields[string(name)]; ok {
		return &s.order[i]
	}
	for i := range s.order {
		if bytes.EqualFold([]byte(s.order[i].name), name) {
			return &s.order[i]
		}
	}
	return nil
}

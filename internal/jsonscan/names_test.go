package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// checkUnique is CheckSchema with I-JSON's rule (RFC 7493 §2.3) on every
// object: each is a map of names, each value any value. It drives the
// map-name machinery on arbitrary documents, which the tests compare with
// encoding/json's own tokenizer; served routes read the op's type instead,
// as the engine's payloads keep last-wins semantics.
func checkUnique(b []byte, maxDepth int) Gate {
	s := &Schema{kind: schemaAny}
	s.elem = s
	return CheckSchema(b, maxDepth, s)
}

// TestCheckUniqueRefusesANameGivenTwice pins, by hand, which documents
// name a member twice, where the refusal points (the second key's quote)
// and the decoded name it reports.
func TestCheckUniqueRefusesANameGivenTwice(t *testing.T) {
	for _, c := range []struct {
		doc    string
		at     int // -1: accepted
		member string
	}{
		{`{"a":1,"b":2}`, -1, ""},
		{`{"a":1,"a":2}`, 7, "a"},
		{`{"a":1,"\u0061":2}`, 7, "a"},            // an escape names the same member
		{`{"\/":1,"/":2}`, 8, "/"},                // so does an escaped solidus
		{`{"a":1,"A":2}`, -1, ""},                 // case differs: two names (I-JSON compares code points)
		{`{"a":{"a":1}}`, -1, ""},                 // one name in each of two objects
		{`[{"a":1},{"a":1}]`, -1, ""},             // the same: two objects
		{`{"a":{"b":1,"b":2},"a":3}`, 12, "b"},    // the inner object closes first
		{`{"x":{"b":1},"x":{"b":2}}`, 13, "x"},    // nested objects are not merged
		{`{"a":1,"b":2,"b":3,"a":4}`, 13, "b"},    // the earliest second key
		{"{\"\xff\":1,\"\xfe\":2}", 7, "\uFFFD"},  // invalid UTF-8 decodes to U+FFFD in both
		{`{"\ud800":1,"\udc00":2}`, 12, "\uFFFD"}, // so do lone surrogates
		{`{"\ud83d\ude00":1,"😀":2}`, 18, "😀"},     // a surrogate pair is its character
		{`{"":1,"":2}`, 6, ""},                    // the empty name too
		{`{"a":1,"a":2`, 12, ""},                  // invalid JSON is refused for what it is
		{`{"a":[1,{"a":2}],"b":{}}`, -1, ""},
		{`{"k":1,"k":2} x`, 7, "k"}, // the duplicate is met before the trailing data
	} {
		g := checkUnique([]byte(c.doc), 64)
		if g.Offset != c.at || g.Member != c.member {
			t.Errorf("checkUnique(%q) = %+v, want offset %d, member %q", c.doc, g, c.at, c.member)
		}
		if plain := Check([]byte(c.doc), 64); plain.Member != "" || (plain.OK() != json.Valid([]byte(c.doc))) {
			t.Errorf("Check(%q) = %+v: the plain gate judges names", c.doc, plain)
		}
	}
}

// TestCheckUniqueFindsADuplicateAmongManyNames: an object of 200,000
// names (past the pairwise compare) is accepted, and refused with one
// name repeated at its end.
func TestCheckUniqueFindsADuplicateAmongManyNames(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"n":{`)
	for i := range 200_000 {
		fmt.Fprintf(&b, `"k%d":0,`, i)
	}
	ok := b.String()[:b.Len()-1] + `}}`
	if g := checkUnique([]byte(ok), 64); !g.OK() {
		t.Fatalf("200,000 distinct names: %+v", g)
	}
	dup := b.String() + `"k123456":1}}`
	if g := checkUnique([]byte(dup), 64); g.Member != "k123456" || g.Offset != len(b.String()) {
		t.Fatalf("a repeat at the end: %+v, want k123456 at %d", g, len(b.String()))
	}
}

// TestCheckUniqueAgreesWithEncodingJSONsTokens: on generated documents
// whose names are drawn from a few spellings (escaped and plain) of a few
// strings, checkUnique refuses exactly those in which encoding/json's own
// tokenizer sees one object give a decoded name twice, and names the same
// member.
func TestCheckUniqueAgreesWithEncodingJSONsTokens(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := genDoc(t, 0)
		g := checkUnique([]byte(doc), 64)
		member, dup := firstDuplicate(t, doc)
		if g.OK() == dup || (dup && g.Member != member) {
			t.Fatalf("checkUnique(%s) = %+v; encoding/json's tokens: duplicate %v of %q", doc, g, dup, member)
		}
	})
}

// FuzzCheckUniqueAgreesWithEncodingJSONsTokens explores arbitrary
// documents: checkUnique never panics, refuses what Check refuses (for the
// same reason, unless a name given twice comes first), and on
// a valid document refuses exactly when encoding/json's tokenizer sees a
// name twice in one object, naming the same one.
func FuzzCheckUniqueAgreesWithEncodingJSONsTokens(f *testing.F) {
	for _, c := range append(gateCases, `{"a":1,"\u0061":2}`, `{"a":{"b":1,"b":2},"a":3}`, "{\"\xff\":1,\"\xfe\":2}", `[{"x":1},{"x":1,"y":[{"x":1}],"x":2}]`) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g := checkUnique(b, MaxDepthLimit)
		if plain := Check(b, MaxDepthLimit); !plain.OK() {
			// The same refusal, or a name given twice met before it.
			if g != plain && (g.Reason != ReasonDuplicate || g.Offset >= plain.Offset) {
				t.Fatalf("checkUnique(%q) = %+v, Check refused it as %+v", b, g, plain)
			}
			return
		}
		member, dup := firstDuplicate(t, string(b))
		if g.OK() == dup || (dup && g.Member != member) {
			t.Fatalf("checkUnique(%q) = %+v; encoding/json's tokens: duplicate %v of %q", b, g, dup, member)
		}
	})
}

// spellings are literal names, several of which decode alike.
var spellings = []string{`"a"`, `"\u0061"`, `"A"`, `"b"`, `"\u0062"`, `"ab"`, `"a\u0062"`, `""`, `"\ud800"`, `"\udfff"`, "\"\xff\"", `"\u00e9"`, `"é"`}

func genDoc(t *rapid.T, depth int) string {
	kind := rapid.IntRange(0, 2).Draw(t, "kind")
	if depth >= 3 {
		kind = 0
	}
	switch kind {
	case 1:
		n := rapid.IntRange(0, 20).Draw(t, "members")
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(rapid.SampledFrom(spellings).Draw(t, "name"))
			b.WriteByte(':')
			b.WriteString(genDoc(t, depth+1))
		}
		b.WriteByte('}')
		return b.String()
	case 2:
		n := rapid.IntRange(0, 4).Draw(t, "elems")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = genDoc(t, depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return rapid.SampledFrom([]string{`1`, `"s"`, `null`, `{}`}).Draw(t, "leaf")
}

// firstDuplicate walks doc with encoding/json's Decoder.Token and reports
// the first duplicate a scan meets at an object's close: among the
// objects holding one, the one closing first, and in it the name whose
// second occurrence comes first.
func firstDuplicate(t interface{ Fatalf(string, ...any) }, doc string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber() // a valid number too large for a float64 is still valid JSON
	var stack []*dupFrame
	// afterValue: the innermost object's member value ended.
	afterValue := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return "", false
		}
		if err != nil {
			t.Fatalf("generated an invalid document %s: %v", doc, err)
		}
		top := (*dupFrame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if top.hasDup {
					return top.dup, true
				}
				afterValue()
				continue
			}
			name := tok.(string)
			if top.seen[name] && !top.hasDup {
				top.dup, top.hasDup = name, true
			}
			top.seen[name] = true
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &dupFrame{obj: true, wantKey: true, seen: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &dupFrame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			afterValue()
		default:
			afterValue()
		}
	}
}

// dupFrame is an open array or object of firstDuplicate's walk.
type dupFrame struct {
	obj     bool            // an object (else an array)
	wantKey bool            // the next token is a name or '}'
	seen    map[string]bool // the names so far
	dup     string          // the first name given twice
	hasDup  bool
}

// schemaSub, schemaEmb and schemaIn are a request type with every kind of
// member CheckSchema tells apart.
type schemaSub struct {
	A int `json:"a"`
}

type schemaEmb struct {
	B int `json:"b"`
}

// selfDecoding is a struct that decodes itself: its object is its own
// business, like a json.RawMessage's.
type selfDecoding struct{ X int }

func (s *selfDecoding) UnmarshalJSON(b []byte) error { return nil }

type schemaIn struct {
	schemaEmb
	Self   selfDecoding           `json:"self"`
	Tokens []int64                `json:"tokens"`
	Extra  string                 `json:"extra,omitempty"`
	Req    json.RawMessage        `json:"req"`
	Any    any                    `json:"any"`
	Env    map[string]string      `json:"env"`
	Sub    *schemaSub             `json:"sub"`
	List   []schemaSub            `json:"list"`
	Nested map[string][]schemaSub `json:"nested"`
	Skip   int                    `json:"-"`
	Plain  int
}

// TestCheckSchemaRefusesAMemberTheDecoderWouldSetTwice pins by hand which
// names are one member: a struct's by the field they set (encoding/json
// matches case-insensitively), a map's by their text; and that objects in
// values decoded whole are data, left alone.
func TestCheckSchemaRefusesAMemberTheDecoderWouldSetTwice(t *testing.T) {
	s := SchemaOf(reflect.TypeFor[schemaIn]())
	for _, c := range []struct {
		doc    string
		member string // "": accepted
	}{
		{`{"tokens":[1,2],"extra":"x","req":{"a":1},"env":{"A":"1","a":"2"},"sub":{"a":1},"b":3,"Plain":1}`, ""},
		{`{"tokens":[1],"extra":"x","extra":"y"}`, "extra"},
		{`{"tokens":[1],"Tokens":[2]}`, "tokens"}, // one field, two spellings
		{`{"TOKENS":[1],"tokens":[2]}`, "tokens"}, // whichever comes first
		{`{"plain":1,"Plain":2}`, "Plain"},        // an untagged field's Go name
		{`{"b":1,"B":2}`, "b"},                    // an embedded struct's promoted field
		{`{"sub":{"a":1,"A":2}}`, "a"},            // a nested struct
		{`{"sub":null,"sub":{}}`, "sub"},          // null sets the member too
		{`{"list":[{"a":1},{"a":1,"a":2}]}`, "a"}, // structs in a list
		{`{"nested":{"k":[{"a":1,"a":2}]}}`, "a"}, // through a map and a list
		{`{"nested":{"k":[],"k":[]}}`, "k"},       // a map's names by text
		{`{"env":{"A":"1","A":"2"}}`, "A"},
		{`{"env":{"A":"1","\u0041":"2"}}`, "A"},
		{`{"req":{"a":1,"a":2}}`, ""},  // RawMessage: data
		{`{"any":{"a":1,"a":2}}`, ""},  // any: data
		{`{"self":{"X":1,"X":2}}`, ""}, // a type with its own UnmarshalJSON: data
		{`{"-":1,"-":2}`, ""},          // a name that sets no field is the decoder's to refuse (unknown)
		{`{"zz":{"x":1,"x":2}}`, ""},   // an unknown member's value is not followed
		{`{"list":{"a":1,"a":2}}`, ""}, // a type mismatch is the decoder's to refuse
		{`[{"tokens":[1],"tokens":[1]}]`, ""},
		{`{"Sub":{"a":1,"a":2},"sub":null}`, "a"}, // a case-folded name is followed; the inner object closes first
	} {
		g := CheckSchema([]byte(c.doc), 64, s)
		if c.member == "" && !g.OK() || c.member != "" && (g.Reason != ReasonDuplicate || g.Member != c.member) {
			t.Errorf("CheckSchema(%s) = %+v, want member %q refused (\"\": accepted)", c.doc, g, c.member)
		}
	}
}

// TestCheckSchemaTellsTheFieldsOfAWideStructApart: a struct of more than
// 64 fields keeps its set fields past one word.
func TestCheckSchemaTellsTheFieldsOfAWideStructApart(t *testing.T) {
	var fields []reflect.StructField
	for i := range 70 {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[int](), Tag: reflect.StructTag(fmt.Sprintf(`json:"f%d"`, i))})
	}
	s := SchemaOf(reflect.StructOf(fields))
	if g := CheckSchema([]byte(`{"f0":1,"f64":2,"f69":3,"f5":4}`), 8, s); !g.OK() {
		t.Errorf("distinct fields refused: %+v", g)
	}
	if g := CheckSchema([]byte(`{"f0":1,"f69":2,"F69":3}`), 8, s); g.Member != "f69" || g.Offset != 16 {
		t.Errorf("field 69 set twice: %+v, want f69 at 16", g)
	}
	if g := CheckSchema([]byte(`{"f5":1,"f69":2,"f5":3}`), 8, s); g.Member != "f5" || g.Offset != 16 {
		t.Errorf("field 5 set twice: %+v, want f5 at 16", g)
	}
}

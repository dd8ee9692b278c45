package jsonscan

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// gateCases are documents on both sides of json.Valid's line.
var gateCases = []string{
	``, ` `, `{}`, ` {} `, `{`, `}`, `[]`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`,
	`"x"`, `"\u12g4"`, `"\x"`, "\"\xff\xfe\"", `0`, `-0`, `01`, `1.`, `.5`, `1e+`, `1E-7`, `-`, `tru`, `true`, `null `,
	`falsey`, `{"a":[1,{"b":null}]} x`, `[[[[]]]]`, `[[[[]]]`, `[{]}`, `{[]}`, `[}`, `{]`, `[1 2]`, `{"a":1}}`, `[]]`,
	"{\"a\":\n\t\r 1}", "\v{}", `{"a":{"b":{"c":[{},[],{"d":[1,2,{"e":"f"}]}]}}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

// With the largest depth limit, Check accepts exactly what json.Valid
// accepts: the gate never refuses a body encoding/json would decode.
func TestGateAgreesWithJSONValid(t *testing.T) {
	for _, c := range gateCases {
		if got, want := Check([]byte(c), MaxDepthLimit).OK(), json.Valid([]byte(c)); got != want {
			t.Errorf("Check(%.60q).OK() = %v, json.Valid says %v", c, got, want)
		}
	}
}

// Every single-byte change of a nested document is judged the same way by
// the gate and by json.Valid.
func TestGateAgreesWithJSONValidOnMutations(t *testing.T) {
	base := []byte(`{"a":[[1,{"b":[true,false,null,"x\"y"]}],{}],"c":{"d":{"e":[-2.5e3,0]}},"f":[]}`)
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("{}[]\":,\\ 0123456789-.etrufalsn")
	for n := 0; n < 50000; n++ {
		b := append([]byte(nil), base...)
		for range 1 + r.IntN(3) {
			switch r.IntN(3) {
			case 0:
				b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
			case 1:
				i := r.IntN(len(b))
				b = append(b[:i:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			default:
				if len(b) > 1 {
					i := r.IntN(len(b))
					b = append(b[:i:i], b[i+1:]...)
				}
			}
		}
		if got, want := Check(b, MaxDepthLimit).OK(), json.Valid(b); got != want {
			t.Fatalf("Check(%q).OK() = %v, json.Valid says %v", b, got, want)
		}
	}
}

// The depth limit counts arrays and objects alike, admits exactly
// maxDepth levels, and reports the depth it refused.
func TestGateRefusesNestingPastItsLimit(t *testing.T) {
	for _, tc := range []struct {
		doc       string
		max, want int // want: refused depth, 0 when accepted
	}{
		{`[[[]]]`, 3, 0}, {`[[[]]]`, 2, 3}, {`{"a":{"b":[1]}}`, 3, 0}, {`{"a":{"b":[1]}}`, 2, 3},
		{`[1,[2],[[3]]]`, 3, 0}, {`[1,[2],[[3]]]`, 2, 3}, {`"[[[["`, 1, 0}, {`[]`, 1, 0}, {`[[]]`, 1, 2},
	} {
		g := Check([]byte(tc.doc), tc.max)
		if g.Depth != tc.want || g.OK() != (tc.want == 0) {
			t.Errorf("Check(%s, %d) = %+v: want refused depth %d", tc.doc, tc.max, g, tc.want)
		}
	}
}

// Six million nested brackets — the body that overflowed the stack of the
// recursive pre-check (issue 15, found 1) — are refused at the limit's
// first excess bracket, without allocating and without growing the stack.
func TestGateRefusesSixMillionBracketsInConstantMemory(t *testing.T) {
	const n = 6_000_000
	doc := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	allocs := testing.AllocsPerRun(3, func() {
		if g := Check(doc, 512); g.OK() || g.Depth != 513 || g.Offset != 512 {
			t.Fatalf("Check = %+v: want refused at depth 513, offset 512", g)
		}
	})
	if allocs != 0 {
		t.Errorf("Check allocated %v times per run, want 0", allocs)
	}
	// With the limit at its maximum the whole document is still scanned
	// iteratively: refused at 10001 levels, with no stack growth.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g := Check(doc, MaxDepthLimit)
	runtime.ReadMemStats(&after)
	if g.OK() || g.Depth != MaxDepthLimit+1 {
		t.Fatalf("Check at MaxDepthLimit = %+v", g)
	}
	if grew := int64(after.StackInuse) - int64(before.StackInuse); grew > 64<<10 {
		t.Errorf("the stack grew by %d bytes on deep nesting, want constant", grew)
	}
}

// FuzzGateAgreesWithJSONValid explores arbitrary documents: the gate at its
// largest limit accepts exactly json.Valid's set, and never panics.
func FuzzGateAgreesWithJSONValid(f *testing.F) {
	for _, c := range gateCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Check(b, MaxDepthLimit).OK(), json.Valid(b); got != want {
			t.Fatalf("Check(%q).OK() = %v, json.Valid says %v", b, got, want)
		}
	})
}

// BenchmarkGate measures the gate (and CheckSchema, which also tracks the
// fields each message sets) on a 32 KiB chat request and on 12 MB of nesting, beside
// json.Valid on the same bytes (the yardstick it replaces
// in front of encoding/json).
func BenchmarkGate(b *testing.B) {
	chat := []byte(`{"messages":[` + strings.Repeat(`{"role":"user","content":"lorem ipsum dolor sit amet, consectetur"},`, 500) + `{}]}`)
	deep := []byte(strings.Repeat("[", 6_000_000) + strings.Repeat("]", 6_000_000))
	chatSchema := SchemaOf(reflect.TypeFor[struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}]())
	for _, tc := range []struct {
		name string
		doc  []byte
	}{{"chat", chat}, {"deep", deep}} {
		b.Run(tc.name+"/gate", func(b *testing.B) {
			b.SetBytes(int64(len(tc.doc)))
			for b.Loop() {
				Check(tc.doc, 512)
			}
		})
		b.Run(tc.name+"/gate-schema", func(b *testing.B) {
			b.SetBytes(int64(len(tc.doc)))
			for b.Loop() {
				CheckSchema(tc.doc, 512, chatSchema)
			}
		})
		b.Run(tc.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(tc.doc)))
			for b.Loop() {
				json.Valid(tc.doc)
			}
		})
	}
}

package jsonscan

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// Valid must accept exactly what encoding/json's json.Valid accepts:
// the ref twin rejects a request with it, and the fast twin's single pass
// replaces it (docs/decisions.md "Preflight in one pass").
func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, ` {} `, `{`, `}`, `[]`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`,
		`"x"`, `"\u12g4"`, `"\u00e9"`, `"\x"`, `"a` + "\x01" + `"`, "\"\xff\xfe\"", `"\/"`,
		`0`, `-0`, `01`, `1.`, `.5`, `1e`, `1e+`, `1E-7`, `-`, `--1`, `1.5e3`, `tru`, `true`, `nul`, `null `, `falsey`,
		`{"a":[1,{"b":null}]} x`, `[[[[]]]]`, `[[[[]]]`, "{\"a\":\n\t\r 1}", "\v{}", `{"a":"` + strings.Repeat("b\\n", 40) + `"}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"messages":[` + strings.Repeat(`{"role":"user","content":"lorem ipsum dolor sit amet"},`, 50) + `{}]}`,
	}
	for _, c := range cases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.60q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// Every single-byte change of a realistic request (truncations included)
// is judged the same way by both validators.
func TestValidJSONAgreesOnMutations(t *testing.T) {
	base := []byte(`{"model":"m","messages":[{"role":"tool","content":[{"type":"text","text":"a\"b\\u00e9\u00e9"}]}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"x":[1,-2.5e3,true,false,null]}}}],"tool_choice":"any"}`)
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("{}[]\":,\\ \t\n0123456789-+.eEtrufalsn\x01\x7f\xc3\xa9ux")
	for n := 0; n < 20000; n++ {
		b := append([]byte(nil), base...)
		switch k := r.IntN(3); k {
		case 0:
			b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		case 1:
			b = b[:r.IntN(len(b))]
		default:
			i := r.IntN(len(b))
			b = append(b[:i], b[i+1:]...)
		}
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	}
}

// KeyIs compares decoded keys, as Python's json.loads and the ref twin do.
func TestKeyIsComparesDecodedKeys(t *testing.T) {
	for key, want := range map[string]bool{
		`"role"`: true, `"rol\u0065"`: true, `"\u0072ole"`: true, `"rolex"`: false, `"rol"`: false,
		`"Role"`: false, `"ro\"le"`: false, `"rol\u0066"`: false,
	} {
		if got := KeyIs([]byte(key), "role"); got != want {
			t.Errorf("KeyIs(%s, role) = %v, want %v", key, got, want)
		}
	}
}

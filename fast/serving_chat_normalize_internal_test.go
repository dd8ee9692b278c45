package fast

import (
	"math/rand/v2"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
)

// TestJSONStringMatchesRef: the flattening's string encoder writes exactly
// ref.JSONString's bytes, on every single byte, on the escapes it writes
// itself mixed with plain text, and on random strings (which send most
// non-ASCII input to ref's encoder).
func TestJSONStringMatchesRef(t *testing.T) {
	cases := []string{"", "line one\nline two", `a"b\c`, "tab\there\r\n", "<&>", "\x7f", "é", "\u2028", "\xff"}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"\n")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \"\\\n\r\t\x00\x1f<>&\x7f\xc3\xa9\xe2\x80\xa8")
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := jsonString(s), ref.JSONString(s); got != want {
			t.Errorf("jsonString(%q) = %s, want %s", s, got, want)
		}
	}
}

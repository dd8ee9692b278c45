package hostile

import (
	"bytes"
	"strings"
	"testing"
)

// TestReplaceNumberRewritesTheNthNumericLeafOnly: leaves are counted in
// document order through objects and arrays; keys and strings that look
// like numbers (escaped quotes included) are not leaves; the input is left
// as it was.
func TestReplaceNumberRewritesTheNthNumericLeafOnly(t *testing.T) {
	body := []byte(`{"7":1,"s":"2 \" 3","a":[-4.5e+6,{"b":0}],"t":true,"n":null,"c":99}`)
	orig := bytes.Clone(body)
	if n := NumberLeaves(body); n != 4 {
		t.Fatalf("NumberLeaves = %d, want 4", n)
	}
	for leaf, want := range []string{
		`{"7":X,"s":"2 \" 3","a":[-4.5e+6,{"b":0}],"t":true,"n":null,"c":99}`,
		`{"7":1,"s":"2 \" 3","a":[X,{"b":0}],"t":true,"n":null,"c":99}`,
		`{"7":1,"s":"2 \" 3","a":[-4.5e+6,{"b":X}],"t":true,"n":null,"c":99}`,
		`{"7":1,"s":"2 \" 3","a":[-4.5e+6,{"b":0}],"t":true,"n":null,"c":X}`,
	} {
		got, ok := ReplaceNumber(body, leaf, "X")
		if !ok || string(got) != want {
			t.Errorf("leaf %d: %s, %t; want %s", leaf, got, ok, want)
		}
	}
	if !bytes.Equal(body, orig) {
		t.Errorf("the input was modified: %s", body)
	}
}

// TestReplaceNumberReportsAMissingLeaf: a leaf past the last, a negative
// one, or a body with no numbers leaves the body as it was, ok false.
func TestReplaceNumberReportsAMissingLeaf(t *testing.T) {
	for _, c := range []struct {
		body string
		leaf int
	}{{`[1,2]`, 2}, {`[1,2]`, -1}, {`{"a":"1"}`, 0}, {``, 0}, {`"unterminated 5`, 0}} {
		if got, ok := ReplaceNumber([]byte(c.body), c.leaf, "0"); ok || string(got) != c.body {
			t.Errorf("%q leaf %d: %q, %t; want it unchanged, false", c.body, c.leaf, got, ok)
		}
	}
}

// TestReplaceNumberTakesAnyNestingAndGarbage: fuzzer bytes are not JSON
// and may nest a million deep; one lexical pass handles both without
// recursion (a recursive walk would overflow the goroutine's stack).
func TestReplaceNumberTakesAnyNestingAndGarbage(t *testing.T) {
	deep := strings.Repeat("[", 1<<20) + "5" + strings.Repeat("]", 1<<20)
	got, ok := ReplaceNumber([]byte(deep), 0, Extremes[9])
	if !ok || len(got) != len(deep)-1+len(Extremes[9]) || !bytes.Contains(got, []byte("[-9223372036854775808]")) {
		t.Errorf("deep array: ok %t, %d bytes", ok, len(got))
	}
	if got, ok := ReplaceNumber([]byte(`x12y"\`), 0, "0.5"); !ok || string(got) != `x0.5y"\` {
		t.Errorf("garbage: %q, %t", got, ok)
	}
}

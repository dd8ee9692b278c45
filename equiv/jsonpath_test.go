package equiv

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fixtures"
)

// lines renders DiffPaths' answer one difference a line, and the count of
// the rest as "+N".
func lines(t *testing.T, mode ErrorMode, ref, impl string, limit int) []string {
	t.Helper()
	ps, more, err := DiffPaths(mode, []byte(ref), []byte(impl), limit)
	if err != nil {
		t.Fatalf("DiffPaths(%s, %s): %v", ref, impl, err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	if more > 0 {
		out = append(out, "+"+strconv.Itoa(more))
	}
	return out
}

// TestDiffPathsNamesEachDifferingLeafByItsJSONPath is the differ's table:
// nested objects by member, arrays by index, members and elements one side
// lacks as (absent), a change of kind as the two whole values, and names
// that are not identifiers in bracket notation.
func TestDiffPathsNamesEachDifferingLeafByItsJSONPath(t *testing.T) {
	for _, c := range []struct {
		name, ref, impl string
		want            []string
	}{
		{"equal", `{"a":[1,{"b":"x"}]}`, `{"a":[1,{"b":"x"}]}`, nil},
		{"nested member", `{"steps":[{"err":{"code":"x"}}]}`, `{"steps":[{"err":{"code":"y"}}]}`,
			[]string{`$.steps[0].err.code: "x" → "y"`}},
		{"array by index", `[1,2,3]`, `[1,5,3,4]`, []string{`$[1]: 2 → 5`, `$[3]: (absent) → 4`}},
		{"shorter array", `{"a":[1,2]}`, `{"a":[]}`, []string{`$.a[0]: 1 → (absent)`, `$.a[1]: 2 → (absent)`}},
		{"member only one side has", `{"a":1,"b":2}`, `{"b":2,"c":{"d":[true]}}`,
			[]string{`$.a: 1 → (absent)`, `$.c: (absent) → {"d":[true]}`}},
		{"kind change", `{"a":{"x":1}}`, `{"a":[1]}`, []string{`$.a: {"x":1} → [1]`}},
		{"number against string", `{"a":1}`, `{"a":"1"}`, []string{`$.a: 1 → "1"`}},
		{"null against false", `[null]`, `[false]`, []string{`$[0]: null → false`}},
		{"bracket names", `{"a b":1,"é":2,"x.y":3}`, `{"a b":2,"é":3,"x.y":4}`,
			[]string{`$["a b"]: 1 → 2`, `$["x.y"]: 3 → 4`, `$["é"]: 2 → 3`}}, // by bytes
		{"members by name", `{"b":1,"a":1}`, `{"b":2,"a":2}`, []string{`$.a: 1 → 2`, `$.b: 1 → 2`}},
		{"root scalar", `"x"`, `"y"`, []string{`$: "x" → "y"`}},
		{"no HTML escaping", `{"bound":"<= 3 & more"}`, `{"bound":"< 3"}`, []string{`$.bound: "<= 3 & more" → "< 3"`}},
	} {
		if got := lines(t, ErrorsExact, c.ref, c.impl, MaxPathDiffs); !cmp.Equal(got, c.want) {
			t.Errorf("%s: %s → %s:\n%s", c.name, c.ref, c.impl, cmp.Diff(c.want, got))
		}
	}
}

// TestDiffPathsComparesNumbersAsDecimalsWithoutRounding: 1.0, 1 and 1e0
// are one number; integers past 2^53, which a float64 would make equal,
// and 0.1 against 0.10000000000000001 (one float64) differ; an exponent
// too large for any float is compared, not computed.
func TestDiffPathsComparesNumbersAsDecimalsWithoutRounding(t *testing.T) {
	for _, c := range []struct {
		ref, impl string
		same      bool
	}{
		{"1", "1.0", true},
		{"1", "1e0", true},
		{"100", "1E+2", true},
		{"-0", "0", true},
		{"0.000", "0e5", true},
		{"1.50", "15e-1", true},
		{"9007199254740993", "9007199254740992", false},
		{"0.1", "0.10000000000000001", false},
		{"-1", "1", false},
		{"1e999999999", "1e999999999", true},
		{"1e999999999", "1e999999998", false},
		{"10e999999998", "1e999999999", true},
	} {
		got := lines(t, ErrorsExact, "["+c.ref+"]", "["+c.impl+"]", MaxPathDiffs)
		if (len(got) == 0) != c.same {
			t.Errorf("%s against %s: differences %q, want same = %v", c.ref, c.impl, got, c.same)
		}
	}
}

// TestDiffPathsKeepsTheFirstDifferencesAndCountsTheRest: a thousand
// differing elements give limit lines and the count of the others, with
// values past the rendering bound cut.
func TestDiffPathsKeepsTheFirstDifferencesAndCountsTheRest(t *testing.T) {
	ref := "[" + strings.TrimSuffix(strings.Repeat("0,", 1000), ",") + "]"
	impl := "[" + strings.TrimSuffix(strings.Repeat("1,", 1000), ",") + "]"
	ps, more, err := DiffPaths(ErrorsExact, []byte(ref), []byte(impl), 3)
	if err != nil || len(ps) != 3 || more != 997 || ps[2].String() != "$[2]: 0 → 1" {
		t.Errorf("kept %v, %d more, %v; want $[0..2] and 997 more", ps, more, err)
	}
	long := `"` + strings.Repeat("é", 200) + `"`
	ps, _, _ = DiffPaths(ErrorsExact, []byte(long), []byte(`1`), 3)
	if len(ps) != 1 || len(ps[0].Ref) > maxPathValue+len("…") || !strings.HasSuffix(ps[0].Ref, "…") || !strings.HasPrefix(ps[0].Ref, `"éé`) {
		t.Errorf("a long value: %q, want it cut at %d bytes on a rune boundary", ps, maxPathValue)
	}
	if _, _, err := DiffPaths(ErrorsExact, []byte(`{`), []byte(`1`), 3); err == nil || !strings.Contains(err.Error(), "reference") {
		t.Errorf("ref not JSON: %v, want an error naming the reference", err)
	}
}

// TestDiffPathsComparesErrorObjectsAsTheModeDoes: inside an accepted
// output, --errors code shows only a differing code, or a field the
// reference names; reject shows nothing for two rejected steps; exact
// shows every member; a step one side rejects and the other does not is
// shown whole in every mode.
func TestDiffPathsComparesErrorObjectsAsTheModeDoes(t *testing.T) {
	ref := `{"trace":[{"error":{"code":"bad_slot","field":"steps[2].slot","value":3,"bound":"in [0, 3)","message":"steps[2].slot = 3: want in [0, 3) (slot outside the counter's ring)"}},{"ok":true}]}`
	own := `{"trace":[{"error":{"code":"bad_slot","field":"steps[2].slot","message":"rejected by the engine"}},{"ok":true}]}`
	wrongCode := `{"trace":[{"error":{"code":"slot_busy","message":"busy"}},{"ok":true}]}`
	accepted := `{"trace":[{"ok":true},{"ok":true}]}`
	for _, c := range []struct {
		mode      ErrorMode
		impl      string
		want      []string
		wantCount int
	}{
		{ErrorsCode, own, nil, 0},
		{ErrorsReject, own, nil, 0},
		{ErrorsReject, wrongCode, nil, 0},
		{ErrorsCode, wrongCode, []string{`$.trace[0].error.code: "bad_slot" → "slot_busy"`, `$.trace[0].error.field: "steps[2].slot" → (absent)`}, 2},
		{ErrorsExact, own, []string{`$.trace[0].error.bound: "in [0, 3)" → (absent)`}, 3},
		{ErrorsCode, accepted, []string{`$.trace[0].error: {"bound":"in [0, 3)",`}, 2},
	} {
		got := lines(t, c.mode, ref, c.impl, MaxPathDiffs)
		if len(got) != c.wantCount {
			t.Errorf("--errors %s against %s: %d differences %q, want %d", c.mode, c.impl, len(got), got, c.wantCount)
			continue
		}
		for k, w := range c.want {
			if !strings.HasPrefix(got[k], w) {
				t.Errorf("--errors %s against %s: line %d is %q, want it to start %q", c.mode, c.impl, k, got[k], w)
			}
		}
	}
}

// TestResultPathsFollowsTheTopLevelComparison: two rejections differ
// under --errors code by their codes alone and under reject not at all;
// an output against a rejection is one line at $ with both values.
func TestResultPathsFollowsTheTopLevelComparison(t *testing.T) {
	rej := func(s string) fixtures.Result { return fixtures.Result{Bytes: []byte(s), Rejected: true} }
	ref := rej(`{"code":"length_mismatch","field":"dst","value":2,"bound":"== len(src) (3)","message":"dst = 2: …"}`)
	for _, c := range []struct {
		mode ErrorMode
		got  fixtures.Result
		want []string
	}{
		{ErrorsCode, rej(`{"code":"length_mismatch","message":"dst is short"}`), nil},
		{ErrorsCode, rej(`{"code":"negative","message":"dst is short"}`), []string{`$.code: "length_mismatch" → "negative"`}},
		{ErrorsReject, rej(`{"code":"negative","message":"x"}`), nil},
		{ErrorsExact, rej(`{"code":"length_mismatch","field":"dst","value":2,"bound":"== len(src) (3)","message":"other"}`),
			[]string{`$.message: "dst = 2: …" → "other"`}},
		{ErrorsCode, fixtures.Result{Bytes: []byte(`{"runs":[]}`)}, []string{`$: {"code":"length_mismatch",`}},
	} {
		ps, _ := resultPaths(c.mode, ref, c.got)
		if len(ps) != len(c.want) {
			t.Errorf("--errors %s, %s: %v, want %q", c.mode, c.got.Bytes, ps, c.want)
			continue
		}
		for k, w := range c.want {
			if !strings.HasPrefix(ps[k].String(), w) {
				t.Errorf("--errors %s, %s: %q, want it to start %q", c.mode, c.got.Bytes, ps[k], w)
			}
		}
	}
	if ps, _ := resultPaths(ErrorsCode, ref, fixtures.Result{Bytes: []byte(`{"runs":[]}`)}); len(ps) == 1 && ps[0].Impl != `{"runs":[]}` {
		t.Errorf("an output against a rejection: impl side %q, want the output", ps[0].Impl)
	}
}

package equiv

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ConfigIndexTopKOverrides is the differential spec of config.index_topk_overrides
// (docs/spec/admission-serving.md §S4).
func ConfigIndexTopKOverrides() *Spec[spec.ConfigIndexTopKOverridesInput, spec.ConfigIndexTopKOverridesOutput] {
	return &Spec[spec.ConfigIndexTopKOverridesInput, spec.ConfigIndexTopKOverridesOutput]{
		Op:          catalog.ConfigIndexTopKOverrides(),
		Valid:       rapid.Custom(overrideValid),
		Invalid:     rapid.Custom(overrideInvalid),
		Boundary:    overrideBoundary(),
		Regressions: overrideRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"s4.4-array":              spec.ErrOverrideNotObject,
			"duplicate-escaped-key":   spec.ErrOverrideDuplicateKey,
			"duplicate-key-no-flags":  spec.ErrOverrideDuplicateKey,
			"invalid-json-no-flags":   spec.ErrOverrideJSON,
			"whitespace-only-json":    spec.ErrOverrideJSON,
			"empty-pattern":           spec.ErrPatternCharset,
			"freq-zero":               spec.ErrFreq,
			"offset-negative":         spec.ErrOffset,
			"null-is-not-an-object":   spec.ErrOverrideNotObject,
			"pattern-lowercase-share": spec.ErrPatternCharset,
		},
		Props: []Prop[spec.ConfigIndexTopKOverridesInput, spec.ConfigIndexTopKOverridesOutput]{
			{"S4.5.1-idempotent", overrideIdempotent},
			{"S4.5.2-other-keys-kept", overrideOtherKeysKept},
			{"S4.5.3-offset-zero-unset", overrideOffsetZeroUnset},
			{"S4.5.4-prefill-decode-agree", overrideDeterministic},
			{"flags-set-their-keys", overrideFlagsSet},
			{"warnings-exact", overrideWarnings},
		},
	}
}

// overrideKeys are member names to draw: ordinary keys, the three controlled
// keys, and keys with escapes or non-ASCII text (all distinct once decoded).
var overrideKeys = []string{`"rope_theta"`, `"a"`, `"\u0062"`, `"é"`, `"x\"y"`, `"num_hidden_layers"`,
	`"index_topk_freq"`, `"index_topk_pattern"`, `"index_skip_topk_offset"`, `"index_topk"`}

// overrideValues are raw value lexemes, including ones equal to a flag's value
// in another spelling (4.0, "F\u0053").
var overrideValues = []string{`8e6`, `2`, `4`, `4.0`, `40e-1`, `-0`, `1E+2`, `3`, `"FS"`, `"F\u0053"`, `"FSSS"`,
	`{"b": [1, 2]}`, `null`, `true`, `[]`, `"x\"y"`, `{ }`, `[ 1 , { "c" : "d" } ]`}

// drawOverrideJSON draws a valid override object with distinct keys and
// random insignificant whitespace, or "" (no override given).
func drawOverrideJSON(t *rapid.T) string {
	if rapid.IntRange(0, 5).Draw(t, "json_empty") == 0 {
		return ""
	}
	keys := rapid.Permutation(overrideKeys).Draw(t, "keys")
	keys = keys[:rapid.IntRange(0, len(keys)).Draw(t, "n_keys")]
	ws := func(label string) string {
		return rapid.SampledFrom([]string{"", "", " ", "\n  ", "\t"}).Draw(t, label)
	}
	var b strings.Builder
	b.WriteString(ws("ws_open") + "{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(ws("ws_key") + k + ws("ws_colon") + ":" + ws("ws_value"))
		b.WriteString(rapid.SampledFrom(overrideValues).Draw(t, "value") + ws("ws_after"))
	}
	b.WriteString("}" + ws("ws_close"))
	return b.String()
}

func overrideValid(t *rapid.T) spec.ConfigIndexTopKOverridesInput {
	in := spec.ConfigIndexTopKOverridesInput{JSON: drawOverrideJSON(t)}
	if rapid.Bool().Draw(t, "has_freq") {
		f := rapid.OneOf(rapid.Int64Range(1, 8), rapid.Int64Range(1, 1<<62)).Draw(t, "freq")
		in.Freq = &f
	}
	if rapid.IntRange(0, 2).Draw(t, "has_pattern") == 0 {
		p := rapid.OneOf(rapid.SampledFrom([]string{"FS", "FSSS", "F", "S"}), rapid.StringMatching(`[FS]{1,80}`)).Draw(t, "pattern")
		in.Pattern = &p
	}
	if rapid.Bool().Draw(t, "has_offset") {
		in.Offset = rapid.Int64Range(1, 10).Draw(t, "offset")
	}
	return in
}

func overrideInvalid(t *rapid.T) Bad[spec.ConfigIndexTopKOverridesInput] {
	in := overrideValid(t)
	type bad = Bad[spec.ConfigIndexTopKOverridesInput]
	switch rapid.IntRange(0, 6).Draw(t, "violation") {
	case 0:
		f := rapid.Int64Range(-1<<40, 0).Draw(t, "bad_freq")
		in.Freq = &f
		return bad{in, spec.ErrFreq}
	case 1:
		p := ""
		in.Pattern = &p
		return bad{in, spec.ErrPatternCharset}
	case 2:
		p := rapid.StringMatching(`[FS]{0,8}`).Draw(t, "head") +
			rapid.SampledFrom([]string{"f", "s", "C", "x", " ", ",", "é"}).Draw(t, "bad_char") +
			rapid.StringMatching(`[FS]{0,8}`).Draw(t, "tail")
		in.Pattern = &p
		return bad{in, spec.ErrPatternCharset}
	case 3:
		in.Offset = rapid.Int64Range(-1<<40, -1).Draw(t, "bad_offset")
		return bad{in, spec.ErrOffset}
	case 4:
		in.JSON = rapid.SampledFrom([]string{"{", " ", "{'a':1}", `{"a":}`, `{"a":1,}`, `{"a" 1}`, "nul", `{"a":1}}`, `{"a":01}`}).Draw(t, "bad_json")
		return bad{in, spec.ErrOverrideJSON}
	case 5:
		in.JSON = rapid.SampledFrom([]string{"[1]", "1", `"s"`, "null", "true", " [ ] ", "-0.5e3"}).Draw(t, "not_object")
		return bad{in, spec.ErrOverrideNotObject}
	default:
		k := rapid.SampledFrom([]string{`"a"`, `"\u0061"`}).Draw(t, "dup_first")
		in.JSON = `{"a": 1, "b": 2, ` + k + `: 3}`
		return bad{in, spec.ErrOverrideDuplicateKey}
	}
}

func str(s string) *string { return &s }

// overrideBoundary: §S4.4's table and the edges around it.
func overrideBoundary() []Case[spec.ConfigIndexTopKOverridesInput] {
	type c = Case[spec.ConfigIndexTopKOverridesInput]
	glm := "FFF" + strings.Repeat("SSSF", 18) + "SSS"
	return []c{
		{"s4.4-empty-json-freq", spec.ConfigIndexTopKOverridesInput{Freq: i64(4)}},
		{"s4.4-rope-theta-freq-offset", spec.ConfigIndexTopKOverridesInput{JSON: `{"rope_theta":8e6}`, Freq: i64(4), Offset: 3}},
		{"s4.4-freq-conflict", spec.ConfigIndexTopKOverridesInput{JSON: `{"index_topk_freq":2}`, Freq: i64(4)}},
		{"s4.4-nested-compacted", spec.ConfigIndexTopKOverridesInput{JSON: `{"a": {"b": [1, 2]}}`, Freq: i64(4)}},
		{"s4.4-no-flags-unchanged", spec.ConfigIndexTopKOverridesInput{JSON: `{"a":1}`}},
		{"no-flags-whitespace-unchanged", spec.ConfigIndexTopKOverridesInput{JSON: ` { "a" : 1 } `}},
		{"no-flags-empty", spec.ConfigIndexTopKOverridesInput{}},
		{"s4.4-array", spec.ConfigIndexTopKOverridesInput{JSON: `[1]`, Freq: i64(4)}},
		{"equal-value-other-spelling", spec.ConfigIndexTopKOverridesInput{JSON: `{"index_topk_freq":4.0,"index_topk_pattern":"F\u0053"}`, Freq: i64(4), Pattern: str("FS")}},
		{"pattern-shadows-json-freq", spec.ConfigIndexTopKOverridesInput{JSON: `{"index_topk_freq":2}`, Pattern: str(glm)}},
		{"pattern-and-freq-flags", spec.ConfigIndexTopKOverridesInput{Freq: i64(4), Pattern: str("FSSS"), Offset: 2}},
		{"offset-replaced-in-place", spec.ConfigIndexTopKOverridesInput{JSON: `{"index_skip_topk_offset":2,"z":0}`, Offset: 3}},
		{"escaped-keys-kept", spec.ConfigIndexTopKOverridesInput{JSON: `{"\u0062":"<&>","é":1}`, Freq: i64(1)}},
		{"freq-int64-max", spec.ConfigIndexTopKOverridesInput{JSON: `{"index_topk_freq":9223372036854775807.0}`, Freq: i64(1<<63 - 1)}},
		{"duplicate-escaped-key", spec.ConfigIndexTopKOverridesInput{JSON: `{"a":1,"\u0061":2}`, Freq: i64(4)}},
		{"duplicate-key-no-flags", spec.ConfigIndexTopKOverridesInput{JSON: `{"a":1,"a":1}`}},
		{"invalid-json-no-flags", spec.ConfigIndexTopKOverridesInput{JSON: `{"a":1`}},
		{"whitespace-only-json", spec.ConfigIndexTopKOverridesInput{JSON: "  ", Freq: i64(4)}},
		{"null-is-not-an-object", spec.ConfigIndexTopKOverridesInput{JSON: "null", Freq: i64(4)}},
		{"empty-pattern", spec.ConfigIndexTopKOverridesInput{Pattern: str("")}},
		{"pattern-lowercase-share", spec.ConfigIndexTopKOverridesInput{Pattern: str("Fs")}},
		{"freq-zero", spec.ConfigIndexTopKOverridesInput{Freq: i64(0)}},
		{"offset-negative", spec.ConfigIndexTopKOverridesInput{Offset: -1}},
	}
}

// overrideRegressions: §S4.7's minimal inputs, named as their mutants.
func overrideRegressions() []Case[spec.ConfigIndexTopKOverridesInput] {
	type c = Case[spec.ConfigIndexTopKOverridesInput]
	return []c{
		// Fixed {"index_topk_freq":4}; the bug appends "index_skip_topk_offset":0 (layer 0 becomes S).
		{"offset-zero-injected", spec.ConfigIndexTopKOverridesInput{Freq: i64(4)}},
		// Fixed keeps rope_theta; the bug returns {"index_topk_freq":4}.
		{"flags-replace-json", spec.ConfigIndexTopKOverridesInput{JSON: `{"rope_theta":8e6}`, Freq: i64(4)}},
	}
}

// members parses a merged output (always a valid object, or "").
func members(s string) ([]spec.OverrideMember, error) {
	if err := ref.CheckOverrideJSON(s); err != nil {
		return nil, err
	}
	return ref.ParseOverrideObject(s)
}

func member(ms []spec.OverrideMember, key string) (spec.OverrideMember, bool) {
	i := slices.IndexFunc(ms, func(m spec.OverrideMember) bool { return m.Key == key })
	if i < 0 {
		return spec.OverrideMember{}, false
	}
	return ms[i], true
}

func controlled(key string) bool {
	return key == spec.KeyIndexTopKFreq || key == spec.KeyIndexTopKPattern || key == spec.KeyIndexSkipTopKOffset
}

// overrideIdempotent is S4.5.1: the output merged again with the same flags is
// the same bytes, and only the shadow warning (by design) recurs.
func overrideIdempotent(lim spec.Limits, in spec.ConfigIndexTopKOverridesInput, out spec.ConfigIndexTopKOverridesOutput) error {
	again := in
	again.JSON = out.JSON
	got, err := ref.ConfigIndexTopKOverrides(lim, again)
	if err != nil {
		return fmt.Errorf("merging the output again: %v", err)
	}
	if got.JSON != out.JSON {
		return fmt.Errorf("second merge %q != first %q", got.JSON, out.JSON)
	}
	for _, w := range got.Warnings {
		if !strings.HasPrefix(w, "index_topk_pattern shadows") {
			return fmt.Errorf("second merge warns %q", w)
		}
	}
	return nil
}

// overrideOtherKeysKept is S4.5.2: keys the flags do not control keep their
// order and compacted bytes; when no flag is set the string is unchanged.
func overrideOtherKeysKept(_ spec.Limits, in spec.ConfigIndexTopKOverridesInput, out spec.ConfigIndexTopKOverridesOutput) error {
	if in.Freq == nil && in.Pattern == nil && in.Offset == 0 {
		if out.JSON != in.JSON {
			return fmt.Errorf("no flag set, yet the string changed: %q -> %q", in.JSON, out.JSON)
		}
		return nil
	}
	before, _ := members(in.JSON)
	after, err := members(out.JSON)
	if err != nil {
		return fmt.Errorf("output %q is not an object: %v", out.JSON, err)
	}
	keep := func(ms []spec.OverrideMember) []string {
		var s []string
		for _, m := range ms {
			if !controlled(m.Key) {
				s = append(s, string(m.RawKey)+":"+string(m.Value))
			}
		}
		return s
	}
	if a, b := keep(before), keep(after); !slices.Equal(a, b) {
		return fmt.Errorf("other members %q became %q", a, b)
	}
	// Controlled keys that were present keep their positions too.
	for i, m := range before {
		if controlled(m.Key) && (i >= len(after) || after[i].Key != m.Key) {
			return fmt.Errorf("key %s moved from position %d", m.Key, i)
		}
	}
	return nil
}

// overrideOffsetZeroUnset is S4.5.3: with offset 0 the offset member is
// exactly what the JSON had (absent stays absent).
func overrideOffsetZeroUnset(_ spec.Limits, in spec.ConfigIndexTopKOverridesInput, out spec.ConfigIndexTopKOverridesOutput) error {
	if in.Offset != 0 {
		return nil
	}
	before, _ := members(in.JSON)
	after, err := members(out.JSON)
	if err != nil {
		return fmt.Errorf("output %q is not an object: %v", out.JSON, err)
	}
	b, hadB := member(before, spec.KeyIndexSkipTopKOffset)
	a, hasA := member(after, spec.KeyIndexSkipTopKOffset)
	if hadB != hasA || !bytes.Equal(a.Value, b.Value) {
		return fmt.Errorf("offset 0 (unset) changed %s from %s to %s", spec.KeyIndexSkipTopKOffset, b.Value, a.Value)
	}
	return nil
}

// overrideDeterministic is S4.5.4: prefill and decode merge the same flags and
// JSON independently and must agree; a second, independent merge gives the
// same bytes and warnings.
func overrideDeterministic(lim spec.Limits, in spec.ConfigIndexTopKOverridesInput, out spec.ConfigIndexTopKOverridesOutput) error {
	decode, err := ref.ConfigIndexTopKOverrides(lim, in)
	if err != nil || decode.JSON != out.JSON || !slices.Equal(decode.Warnings, out.Warnings) {
		return fmt.Errorf("decode's merge %q %q (%v) != prefill's %q %q", decode.JSON, decode.Warnings, err, out.JSON, out.Warnings)
	}
	return nil
}

// overrideFlagsSet: every set flag's key holds the flag's value; new keys come
// last, in flag order.
func overrideFlagsSet(_ spec.Limits, in spec.ConfigIndexTopKOverridesInput, out spec.ConfigIndexTopKOverridesOutput) error {
	before, _ := members(in.JSON)
	after, err := members(out.JSON)
	if err != nil {
		return fmt.Errorf("output %q is not an object: %v", out.JSON, err)
	}
	appended := []string{}
	for _, f := range ref.IndexTopKFlags(in) {
		m, ok := member(after, f.Key)
		if !ok || !bytes.Equal(m.Value, f.JSON) {
			return fmt.Errorf("%s=%s but %s is %q", f.Flag, f.Text, f.Key, m.Value)
		}
		if _, had := member(before, f.Key); !had {
			appended = append(appended, f.Key)
		}
	}
	if len(after) != len(before)+len(appended) {
		return fmt.Errorf("%d members from %d plus %d appended", len(after), len(before), len(appended))
	}
	for i, k := range appended {
		if got := after[len(before)+i].Key; got != k {
			return fmt.Errorf("appended key %d is %s, want %s", i, got, k)
		}
	}
	return nil
}

// overrideWarnings: an override warning for each flag that replaced a
// different value, in flag order, then the shadow warning iff a pattern
// flag meets a present index_topk_freq.
func overrideWarnings(_ spec.Limits, in spec.ConfigIndexTopKOverridesInput, out spec.ConfigIndexTopKOverridesOutput) error {
	before, _ := members(in.JSON)
	after, _ := members(out.JSON)
	want := []string{}
	for _, f := range ref.IndexTopKFlags(in) {
		if m, ok := member(before, f.Key); ok && !ref.OverrideValueEquals(m.Value, f) {
			want = append(want, ref.OverrideWarning(f, m.Value))
		}
	}
	if m, ok := member(after, spec.KeyIndexTopKFreq); ok && in.Pattern != nil {
		want = append(want, ref.ShadowWarning(m.Value))
	}
	if !slices.Equal(want, out.Warnings) {
		return fmt.Errorf("warnings %q, want %q", out.Warnings, want)
	}
	return nil
}

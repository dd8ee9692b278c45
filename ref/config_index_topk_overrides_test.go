package ref_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func i64p(v int64) *int64   { return &v }
func strp(s string) *string { return &s }

// TestConfigIndexTopKOverridesExamples pins docs/spec/admission-serving.md §S4.4's table.
func TestConfigIndexTopKOverridesExamples(t *testing.T) {
	override := "--nsa-index-topk-freq=4 overrides index_topk_freq=2 from --json-model-override-args"
	cases := []struct {
		in       spec.ConfigIndexTopKOverridesInput
		json     string
		warnings []string
	}{
		{spec.ConfigIndexTopKOverridesInput{Freq: i64p(4)}, `{"index_topk_freq":4}`, []string{}},
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"rope_theta":8e6}`, Freq: i64p(4), Offset: 3},
			`{"rope_theta":8e6,"index_topk_freq":4,"index_skip_topk_offset":3}`, []string{}},
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"index_topk_freq":2}`, Freq: i64p(4)}, `{"index_topk_freq":4}`, []string{override}},
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"a": {"b": [1, 2]}}`, Freq: i64p(4)}, `{"a":{"b":[1,2]},"index_topk_freq":4}`, []string{}},
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"a":1}`}, `{"a":1}`, []string{}},
		// No flag: the string itself, whitespace and all, is returned.
		{spec.ConfigIndexTopKOverridesInput{JSON: ` { "a" : 1 } `}, ` { "a" : 1 } `, []string{}},
		// Equal values in another spelling do not warn; the flag's bytes replace them in place.
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"index_topk_freq": 4.0, "z": "\u0041"}`, Freq: i64p(4)}, `{"index_topk_freq":4,"z":"\u0041"}`, []string{}},
		// Step 3: the pattern shadows a freq from either source.
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"index_topk_freq":2}`, Pattern: strp("FSSS")},
			`{"index_topk_freq":2,"index_topk_pattern":"FSSS"}`, []string{"index_topk_pattern shadows index_topk_freq=2"}},
	}
	for _, c := range cases {
		out, err := ref.ConfigIndexTopKOverrides(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%+v: %v", c.in, err)
		}
		if diff := cmp.Diff(spec.ConfigIndexTopKOverridesOutput{JSON: c.json, Warnings: c.warnings}, out); diff != "" {
			t.Errorf("%q: (-want +got)\n%s", c.in.JSON, diff)
		}
	}
}

// TestConfigIndexTopKOverridesFeedTheIndexPlan: §S4.4's freq 4, offset 3 over 10
// layers is FFFSSSFSSS once the merged config reaches nsa.index_plan, and
// offset 0 left unset keeps layer 0 F under the §S4.3 formula, where the
// injected 0 of bug S4-B1 would make it S.
func TestConfigIndexTopKOverridesFeedTheIndexPlan(t *testing.T) {
	out, err := ref.ConfigIndexTopKOverrides(spec.DefaultLimits(), spec.ConfigIndexTopKOverridesInput{Freq: i64p(4), Offset: 3})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Freq   int `json:"index_topk_freq"`
		Offset int `json:"index_skip_topk_offset"`
	}
	if err := json.Unmarshal([]byte(out.JSON), &cfg); err != nil {
		t.Fatal(err)
	}
	plan, err := ref.NSAIndexPlan(spec.DefaultLimits(), spec.NSAIndexPlanInput{N: 10, Freq: &cfg.Freq, Offset: cfg.Offset})
	if err != nil || plan.Pattern != "FFFSSSFSSS" {
		t.Fatalf("plan %q (%v), want FFFSSSFSSS", plan.Pattern, err)
	}
	out, _ = ref.ConfigIndexTopKOverrides(spec.DefaultLimits(), spec.ConfigIndexTopKOverridesInput{Freq: i64p(4)})
	if strings.Contains(out.JSON, spec.KeyIndexSkipTopKOffset) {
		t.Fatalf("offset 0 reached the config: %s", out.JSON)
	}
	// Bug S4-B1's injected offset 0 would make layer 0 S: max(0-0+1, 0) % 4 = 1.
	if injected := dsaSkip(0, 0, 4); !injected {
		t.Fatal("the S4-B1 arithmetic no longer shows layer 0 as S")
	}
	if dsaSkip(0, 3, 4) {
		t.Fatal("layer 0 is S under offset 3")
	}
}

// TestConfigIndexTopKOverridesBadInput is §S4.6: flags first (freq, pattern,
// offset), then the JSON's syntax, kind and duplicate keys.
func TestConfigIndexTopKOverridesBadInput(t *testing.T) {
	cases := []struct {
		in    spec.ConfigIndexTopKOverridesInput
		want  *spec.Sentinel
		field string
	}{
		{spec.ConfigIndexTopKOverridesInput{Freq: i64p(0), Offset: -1, JSON: "["}, spec.ErrFreq, "freq"},
		{spec.ConfigIndexTopKOverridesInput{Pattern: strp(""), Offset: -1}, spec.ErrPatternCharset, "pattern"},
		{spec.ConfigIndexTopKOverridesInput{Pattern: strp("FSC")}, spec.ErrPatternCharset, "pattern[2]"},
		{spec.ConfigIndexTopKOverridesInput{Offset: -1, JSON: "["}, spec.ErrOffset, "offset"},
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"a":}`}, spec.ErrOverrideJSON, "json"},
		{spec.ConfigIndexTopKOverridesInput{JSON: `[1]`, Freq: i64p(4)}, spec.ErrOverrideNotObject, "json"},
		{spec.ConfigIndexTopKOverridesInput{JSON: `{"a":1,"\u0061":2}`}, spec.ErrOverrideDuplicateKey, "json"},
	}
	for _, c := range cases {
		_, err := ref.ConfigIndexTopKOverrides(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%+v: got %v, want %v at %s", c.in, err, c.want, c.field)
		}
	}
}

// dsaSkip is §S4.3's rule without a pattern: layer l is S iff
// max(l - offset + 1, 0) % freq != 0.
func dsaSkip(l, offset, freq int) bool { return max(l-offset+1, 0)%freq != 0 }
